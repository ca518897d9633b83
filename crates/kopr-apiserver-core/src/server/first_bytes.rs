//! A connection that must send its first bytes in time: after the TLS
//! handshake, a client has kube-apiserver's `ReadHeaderTimeout` to start its
//! first HTTP/1.1 request or HTTP/2 preface, or the connection is closed
//! (hyper's HTTP/1.1 header timeout starts only once a request begins, and
//! its protocol detection waits forever).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Wraps `io`: reads fail with `TimedOut` if nothing was read within
/// `deadline` of the wrapping; after the first byte it is transparent.
pub struct FirstBytes<IO> {
    io: IO,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<IO> FirstBytes<IO> {
    /// Starts the clock.
    pub fn new(io: IO, deadline: Duration) -> Self {
        FirstBytes {
            io,
            sleep: Some(Box::pin(tokio::time::sleep_until(
                Instant::now() + deadline,
            ))),
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for FirstBytes<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(r) => {
                if buf.filled().len() > before {
                    this.sleep = None;
                }
                Poll::Ready(r)
            }
            Poll::Pending => {
                let expired = this
                    .sleep
                    .as_mut()
                    .is_some_and(|sleep| sleep.as_mut().poll(cx).is_ready());
                if expired {
                    Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no request in time",
                    )))
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for FirstBytes<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn silence_times_out_and_bytes_stop_the_clock() {
        let (client, server) = tokio::io::duplex(64);
        let mut quiet = FirstBytes::new(server, Duration::from_secs(32));
        let mut buf = [0u8; 8];
        let err = quiet.read(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        drop(client);

        let (mut client, server) = tokio::io::duplex(64);
        let mut talking = FirstBytes::new(server, Duration::from_secs(32));
        client.write_all(b"GET").await.unwrap();
        assert_eq!(talking.read(&mut buf).await.unwrap(), 3);
        // Later silence is the protocol's business, not this wrapper's.
        let later = tokio::time::timeout(Duration::from_secs(60), talking.read(&mut buf)).await;
        assert!(later.is_err(), "no timeout after the first bytes");
    }
}
