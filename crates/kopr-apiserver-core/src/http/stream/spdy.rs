//! The server side of SPDY/3.1 as Kubernetes streaming uses it (the
//! subset `moby/spdystream` speaks): the client opens streams with
//! `SYN_STREAM` (headers in a zlib stream compressed with SPDY's preset
//! dictionary, one stream per connection and direction), the server
//! answers each with `SYN_REPLY`, data flows in `DATA` frames (`FIN`
//! half-closes), `RST_STREAM` resets a stream, `PING`s are echoed and
//! `GOAWAY` ends the connection. Flow control (`WINDOW_UPDATE`,
//! `SETTINGS`) is read and ignored, as spdystream does.

use std::collections::HashMap;
use std::sync::LazyLock;

use bytes::{Bytes, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
const HEADERS: u16 = 8;
const FLAG_FIN: u8 = 1;
/// The largest frame payload read (the protocol allows 2^24 - 1).
const MAX_FRAME: usize = 0x00ff_ffff;
/// The largest header block inflated.
const MAX_HEADERS: usize = 1 << 20;
/// The largest DATA frame written.
const CHUNK: usize = 32 * 1024;

/// The words of SPDY/3's header compression dictionary that are stored
/// with a 4-byte length before them.
const DICT_WORDS: [&str; 65] = [
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
];

/// The rest of the dictionary, stored as is.
const DICT_TAIL: &str = concat!(
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505",
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request",
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented",
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ",
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,",
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=",
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.",
);

/// SPDY/3's header compression dictionary (1423 bytes).
static DICTIONARY: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut d = Vec::with_capacity(1423);
    for w in DICT_WORDS {
        d.extend_from_slice(&(w.len() as u32).to_be_bytes());
        d.extend_from_slice(w.as_bytes());
    }
    d.extend_from_slice(DICT_TAIL.as_bytes());
    d
});

/// A header block: name/value pairs (names lowercase).
pub type Headers = Vec<(String, String)>;

fn encode_headers(headers: &Headers) -> Vec<u8> {
    let mut raw = Vec::new();
    raw.extend_from_slice(&(headers.len() as u32).to_be_bytes());
    for (k, v) in headers {
        raw.extend_from_slice(&(k.len() as u32).to_be_bytes());
        raw.extend_from_slice(k.to_ascii_lowercase().as_bytes());
        raw.extend_from_slice(&(v.len() as u32).to_be_bytes());
        raw.extend_from_slice(v.as_bytes());
    }
    raw
}

fn decode_headers(raw: &[u8]) -> Option<Headers> {
    let mut pos = 0;
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = raw.get(pos..pos + n)?;
        pos += n;
        Some(s)
    };
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let count = be(take(4)?);
    let mut out = Vec::new();
    for _ in 0..count {
        let n = be(take(4)?);
        let name = String::from_utf8_lossy(take(n)?).to_ascii_lowercase();
        let n = be(take(4)?);
        let value = String::from_utf8_lossy(take(n)?).into_owned();
        // Several values of one name are NUL-separated.
        for v in value.split('\0') {
            out.push((name.clone(), v.to_string()));
        }
    }
    Some(out)
}

/// The header compressor of one direction of a connection.
struct Deflater(Compress);

impl Deflater {
    fn new() -> Deflater {
        let mut c = Compress::new(Compression::default(), true);
        let _ = c.set_dictionary(&DICTIONARY);
        Deflater(c)
    }

    fn block(&mut self, raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(raw.len() + 128);
        let mut consumed = 0;
        loop {
            if out.len() == out.capacity() {
                out.reserve(1024);
            }
            let before = self.0.total_in();
            if self
                .0
                .compress_vec(&raw[consumed..], &mut out, FlushCompress::Sync)
                .is_err()
            {
                break;
            }
            consumed += (self.0.total_in() - before) as usize;
            // Everything is out once all input is in and the flush did
            // not run out of room.
            if consumed >= raw.len() && out.len() < out.capacity() {
                break;
            }
        }
        out
    }
}

/// The header decompressor of the other direction.
struct Inflater(Decompress);

impl Inflater {
    fn new() -> Inflater {
        Inflater(Decompress::new(true))
    }

    fn block(&mut self, input: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(input.len() * 4 + 256);
        let mut consumed = 0;
        loop {
            if out.capacity() - out.len() < 256 {
                out.reserve(4096);
            }
            let (in0, out0) = (self.0.total_in(), self.0.total_out());
            let r = self
                .0
                .decompress_vec(&input[consumed..], &mut out, FlushDecompress::Sync);
            consumed += (self.0.total_in() - in0) as usize;
            let progressed = self.0.total_in() != in0 || self.0.total_out() != out0;
            match r {
                Ok(Status::StreamEnd) => break,
                Ok(_) => {
                    if consumed >= input.len() && out.len() < out.capacity() {
                        break;
                    }
                    if !progressed && consumed >= input.len() {
                        break;
                    }
                }
                Err(e) if e.needs_dictionary().is_some() => {
                    self.0.set_dictionary(&DICTIONARY).ok()?;
                }
                Err(_) => return None,
            }
            if out.len() > MAX_HEADERS {
                return None;
            }
        }
        Some(out)
    }
}

/// A frame the server writes.
#[derive(Debug)]
enum Frame {
    Reply(u32),
    Data { id: u32, fin: bool, data: Bytes },
    Ping(u32),
    GoAway,
}

fn control(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(8 + payload.len());
    f.extend_from_slice(&(0x8003u16).to_be_bytes());
    f.extend_from_slice(&kind.to_be_bytes());
    let len = payload.len() as u32;
    f.push(flags);
    f.extend_from_slice(&len.to_be_bytes()[1..]);
    f.extend_from_slice(payload);
    f
}

fn encode(frame: Frame, deflater: &mut Deflater, last_id: u32) -> Vec<u8> {
    match frame {
        Frame::Reply(id) => {
            let mut p = id.to_be_bytes().to_vec();
            p.extend(deflater.block(&encode_headers(&Vec::new())));
            control(SYN_REPLY, 0, &p)
        }
        Frame::Data { id, fin, data } => {
            let mut f = Vec::with_capacity(8 + data.len());
            f.extend_from_slice(&(id & 0x7fff_ffff).to_be_bytes());
            f.push(if fin { FLAG_FIN } else { 0 });
            f.extend_from_slice(&(data.len() as u32).to_be_bytes()[1..]);
            f.extend_from_slice(&data);
            f
        }
        Frame::Ping(id) => control(PING, 0, &id.to_be_bytes()),
        Frame::GoAway => {
            let mut p = last_id.to_be_bytes().to_vec();
            p.extend_from_slice(&0u32.to_be_bytes());
            control(GOAWAY, 0, &p)
        }
    }
}

/// A stream the client opened.
pub struct Stream {
    /// Its ID.
    pub id: u32,
    /// Its headers (names lowercase).
    pub headers: Headers,
    /// Data the client sends on it; ends with the client's `FIN` or reset.
    pub data: mpsc::UnboundedReceiver<Bytes>,
    /// Writing to it.
    pub out: Writer,
}

impl Stream {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The server's half of a stream.
#[derive(Clone)]
pub struct Writer {
    id: u32,
    tx: mpsc::Sender<Frame>,
}

impl Writer {
    /// Sends data (in frames of at most 32 KiB).
    pub async fn write(&self, data: &[u8]) -> bool {
        for chunk in data.chunks(CHUNK) {
            let frame = Frame::Data {
                id: self.id,
                fin: false,
                data: Bytes::copy_from_slice(chunk),
            };
            if self.tx.send(frame).await.is_err() {
                return false;
            }
        }
        true
    }

    /// Half-closes the stream (`FIN`).
    pub async fn finish(&self) {
        let _ = self
            .tx
            .send(Frame::Data {
                id: self.id,
                fin: true,
                data: Bytes::new(),
            })
            .await;
    }
}

/// A SPDY connection: the streams the client opens, and its end.
pub struct Connection {
    /// Streams in the order the client opened them; ends with the
    /// connection.
    pub streams: mpsc::UnboundedReceiver<Stream>,
    tx: mpsc::Sender<Frame>,
}

impl Connection {
    /// Sends `GOAWAY` and closes the connection once everything queued
    /// before is written.
    pub async fn close(self) {
        let _ = self.tx.send(Frame::GoAway).await;
    }
}

/// Serves SPDY on a byte stream.
pub fn serve<S>(io: S) -> Connection
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut reader, mut writer) = tokio::io::split(io);
    let (tx, mut rx) = mpsc::channel::<Frame>(64);
    let (streams_tx, streams_rx) = mpsc::unbounded_channel();
    let frames = tx.clone();
    tokio::spawn(async move {
        let mut deflater = Deflater::new();
        let mut last_id = 0u32;
        while let Some(frame) = rx.recv().await {
            let goaway = matches!(frame, Frame::GoAway);
            if let Frame::Reply(id) = frame {
                last_id = last_id.max(id);
            }
            let bytes = encode(frame, &mut deflater, last_id);
            if writer.write_all(&bytes).await.is_err() {
                break;
            }
            if (goaway || rx.is_empty()) && writer.flush().await.is_err() {
                break;
            }
            if goaway {
                let _ = writer.shutdown().await;
                break;
            }
        }
    });
    tokio::spawn(async move {
        let mut inflater = Inflater::new();
        let mut open: HashMap<u32, mpsc::UnboundedSender<Bytes>> = HashMap::new();
        let mut buf = BytesMut::with_capacity(64 * 1024);
        loop {
            let Some((head, payload)) = next_frame(&mut reader, &mut buf).await else {
                break;
            };
            if head[0] & 0x80 == 0 {
                let id = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) & 0x7fff_ffff;
                let fin = head[4] & FLAG_FIN != 0;
                if let Some(s) = open.get(&id) {
                    if !payload.is_empty() {
                        let _ = s.send(payload);
                    }
                    if fin {
                        open.remove(&id);
                    }
                }
                continue;
            }
            let kind = u16::from_be_bytes([head[2], head[3]]);
            let flags = head[4];
            let id_at = |p: &[u8]| {
                p.get(..4)
                    .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff)
            };
            match kind {
                SYN_STREAM => {
                    let (Some(id), Some(block)) = (id_at(&payload), payload.get(10..)) else {
                        break;
                    };
                    let Some(headers) = inflater.block(block).and_then(|raw| decode_headers(&raw))
                    else {
                        break;
                    };
                    if frames.send(Frame::Reply(id)).await.is_err() {
                        break;
                    }
                    let (data_tx, data_rx) = mpsc::unbounded_channel();
                    if flags & FLAG_FIN == 0 {
                        open.insert(id, data_tx);
                    }
                    let stream = Stream {
                        id,
                        headers,
                        data: data_rx,
                        out: Writer {
                            id,
                            tx: frames.clone(),
                        },
                    };
                    let _ = streams_tx.send(stream);
                }
                SYN_REPLY | HEADERS => {
                    // Keep the decompressor in step.
                    if let Some(block) = payload.get(4..)
                        && inflater.block(block).is_none()
                    {
                        break;
                    }
                }
                RST_STREAM => {
                    if let Some(id) = id_at(&payload) {
                        open.remove(&id);
                    }
                }
                PING => {
                    if let Some(id) = id_at(&payload) {
                        let _ = frames.send(Frame::Ping(id)).await;
                    }
                }
                GOAWAY => break,
                _ => {}
            }
        }
        // The connection is over: every stream's data ends.
        drop(open);
    });
    Connection {
        streams: streams_rx,
        tx,
    }
}

async fn next_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    buf: &mut BytesMut,
) -> Option<([u8; 8], Bytes)> {
    while buf.len() < 8 {
        if reader.read_buf(buf).await.ok()? == 0 {
            return None;
        }
    }
    let mut head = [0u8; 8];
    head.copy_from_slice(&buf[..8]);
    let len = u32::from_be_bytes([0, head[5], head[6], head[7]]) as usize;
    if len > MAX_FRAME {
        return None;
    }
    while buf.len() < 8 + len {
        buf.reserve(8 + len - buf.len());
        if reader.read_buf(buf).await.ok()? == 0 {
            return None;
        }
    }
    let mut frame = buf.split_to(8 + len);
    let payload = frame.split_off(8).freeze();
    Some((head, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_is_spdy3s() {
        assert_eq!(DICTIONARY.len(), 1423);
        assert_eq!(&DICTIONARY[..11], b"\0\0\0\x07options");
        assert!(DICTIONARY.ends_with(b"enq=0."));
    }

    #[test]
    fn header_blocks_round_trip_through_the_shared_zlib_streams() {
        let mut d = Deflater::new();
        let mut i = Inflater::new();
        for n in 0..3 {
            let headers: Headers = vec![
                ("streamtype".into(), "data".into()),
                ("port".into(), format!("80{n}")),
            ];
            let block = d.block(&encode_headers(&headers));
            let raw = i.block(&block).expect("inflates");
            assert_eq!(decode_headers(&raw).unwrap(), headers);
        }
    }

    #[tokio::test]
    async fn streams_and_replies() {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let mut conn = serve(server);
        let (mut cr, mut cw) = tokio::io::split(client);
        let mut d = Deflater::new();
        let mut syn = 1u32.to_be_bytes().to_vec();
        syn.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        syn.extend(d.block(&encode_headers(&vec![(
            "streamtype".into(),
            "stdin".into(),
        )])));
        cw.write_all(&control(SYN_STREAM, 0, &syn)).await.unwrap();
        let data = encode(
            Frame::Data {
                id: 1,
                fin: true,
                data: Bytes::from_static(b"hi"),
            },
            &mut d,
            0,
        );
        cw.write_all(&data).await.unwrap();
        let mut s = conn.streams.recv().await.unwrap();
        assert_eq!(s.header("streamtype"), Some("stdin"));
        assert_eq!(s.data.recv().await.unwrap(), Bytes::from_static(b"hi"));
        assert!(s.data.recv().await.is_none());
        let mut buf = BytesMut::new();
        let (head, payload) = next_frame(&mut cr, &mut buf).await.unwrap();
        assert_eq!(u16::from_be_bytes([head[2], head[3]]), SYN_REPLY);
        let mut i = Inflater::new();
        assert_eq!(
            decode_headers(&i.block(&payload[4..]).unwrap()).unwrap(),
            vec![]
        );
    }
}
