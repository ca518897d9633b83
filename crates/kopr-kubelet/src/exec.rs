//! The simulated command interpreter that `pods/exec` runs in a
//! simulated container. It runs no processes: a small set of commands
//! works on the container's in-memory file tree ([`super::files`]), its
//! environment and the exec's standard streams.
//!
//! Commands: `echo [-n] [-e]`, `printf FORMAT [ARG…]`, `cat [FILE…]`
//! (stdin to stdout without files or with `-`), `env`, `printenv [NAME…]`,
//! `hostname`, `pwd`, `ls [-a] [-l] [PATH…]`, `sleep N`, `true`, `false`,
//! `exit [N]`, `test`/`[`, `mkdir [-p]`, `rm [-r] [-f]`, `touch`, `tar`
//! ([`super::tar`]), `head`, `tail`, `sort`, `wc`, `grep`
//! ([`super::filters`]), and `sh`/`bash` (`-c SCRIPT`, or a script read from
//! stdin line by line) with the grammar of [`super::shell`] and the
//! builtins `cd`, `export` and `NAME=value`. A command given by path
//! (`/bin/sh`) is found by its last component. Anything else writes
//! `<cmd>: command not found` to stderr and exits with 127.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;

use super::files::{self, Fs, FsError, Node, components, join};
use super::shell::{self, Part, Redirect, Simple, When, Word};

pub use crate::node_runtime::Stream;

/// A command being run: its container's tree, environment and streams.
pub struct Process {
    /// The container's file tree.
    pub fs: Arc<Mutex<Fs>>,
    /// Environment variables (and shell variables), in order.
    pub env: Vec<(String, String)>,
    /// The working directory.
    pub cwd: String,
    /// The container's hostname.
    pub hostname: String,
    /// Standard input: chunks until the client closes it (None: no stdin).
    pub stdin: Option<mpsc::UnboundedReceiver<Bytes>>,
    /// Standard output and error.
    pub out: mpsc::Sender<(Stream, Bytes)>,
    last: i32,
    exiting: Option<i32>,
    pending: Vec<u8>,
}

/// Where a command reads from.
enum Src {
    Stdin,
    Data(Option<Vec<u8>>),
}

/// Where a command writes to.
enum Dst {
    Real(Stream),
    Buf(Vec<u8>),
    Same,
}

struct Io {
    stdin: Src,
    stdout: Dst,
    stderr: Dst,
}

type Boxed<'a> = Pin<Box<dyn Future<Output = i32> + Send + 'a>>;

impl Process {
    /// A process about to run in a container.
    pub fn new(
        fs: Arc<Mutex<Fs>>,
        env: Vec<(String, String)>,
        cwd: String,
        hostname: String,
        stdin: Option<mpsc::UnboundedReceiver<Bytes>>,
        out: mpsc::Sender<(Stream, Bytes)>,
    ) -> Process {
        Process {
            fs,
            env,
            cwd,
            hostname,
            stdin,
            out,
            last: 0,
            exiting: None,
            pending: Vec::new(),
        }
    }

    /// Runs `argv` to its end; returns its exit status (0–255).
    pub async fn run(&mut self, argv: &[String]) -> i32 {
        let mut io = Io {
            stdin: Src::Stdin,
            stdout: Dst::Real(Stream::Stdout),
            stderr: Dst::Real(Stream::Stderr),
        };
        let code = self.command(argv, &mut io).await;
        code & 0xff
    }

    fn var(&self, name: &str) -> String {
        match name {
            "?" => self.last.to_string(),
            "$" => "1".into(),
            "#" | "0" => if name == "0" { "sh" } else { "0" }.into(),
            _ => self
                .env
                .iter()
                .rev()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default(),
        }
    }

    fn set_var(&mut self, name: &str, value: String) {
        match self.env.iter_mut().find(|(k, _)| k == name) {
            Some(e) => e.1 = value,
            None => self.env.push((name.to_string(), value)),
        }
    }

    fn expand(&self, w: &Word) -> Option<String> {
        let mut s = String::new();
        for p in &w.parts {
            match p {
                Part::Lit(l) => s.push_str(l),
                Part::Var(v) => s.push_str(&self.var(v)),
            }
        }
        (w.quoted || !s.is_empty()).then_some(s)
    }

    async fn put(&mut self, io: &mut Io, which: Stream, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let dst = match which {
            Stream::Stdout => &mut io.stdout,
            Stream::Stderr => match io.stderr {
                Dst::Same => &mut io.stdout,
                _ => &mut io.stderr,
            },
        };
        match dst {
            Dst::Real(s) => {
                let _ = self.out.send((*s, Bytes::copy_from_slice(data))).await;
            }
            Dst::Buf(b) => b.extend_from_slice(data),
            Dst::Same => {}
        }
    }

    async fn out(&mut self, io: &mut Io, text: &str) {
        self.put(io, Stream::Stdout, text.as_bytes()).await;
    }

    async fn err(&mut self, io: &mut Io, text: &str) {
        self.put(io, Stream::Stderr, text.as_bytes()).await;
    }

    /// The next chunk of input (None at its end).
    async fn next_input(&mut self, src: &mut Src) -> Option<Vec<u8>> {
        match src {
            Src::Data(d) => d.take().filter(|d| !d.is_empty()),
            Src::Stdin => {
                if !self.pending.is_empty() {
                    return Some(std::mem::take(&mut self.pending));
                }
                let rx = self.stdin.as_mut()?;
                rx.recv().await.map(|b| b.to_vec())
            }
        }
    }

    async fn read_all(&mut self, src: &mut Src) -> Vec<u8> {
        let mut all = Vec::new();
        while let Some(chunk) = self.next_input(src).await {
            all.extend_from_slice(&chunk);
        }
        all
    }

    fn fs(&self) -> std::sync::MutexGuard<'_, Fs> {
        files::lock(&self.fs)
    }

    fn path(&self, p: &str) -> Vec<String> {
        components(&self.cwd, p)
    }

    fn command<'a>(&'a mut self, argv: &'a [String], io: &'a mut Io) -> Boxed<'a> {
        Box::pin(async move {
            let Some(first) = argv.first() else { return 0 };
            let name = match first.rsplit_once('/') {
                Some(("/bin" | "/usr/bin" | "/sbin" | "/usr/sbin" | "/usr/local/bin", base)) => {
                    base
                }
                _ => first.as_str(),
            };
            let args = &argv[1..];
            match name {
                "echo" => self.echo(args, io).await,
                "printf" => self.printf(args, io).await,
                "cat" => self.cat(args, io).await,
                "env" => {
                    let text: String = self.env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
                    self.out(io, &text).await;
                    0
                }
                "printenv" => self.printenv(args, io).await,
                "hostname" => {
                    let h = format!("{}\n", self.hostname);
                    self.out(io, &h).await;
                    0
                }
                "pwd" => {
                    let cwd = format!("{}\n", self.cwd);
                    self.out(io, &cwd).await;
                    0
                }
                "true" | ":" => 0,
                "false" => 1,
                "exit" => {
                    let code = match args.first() {
                        Some(a) => a.parse::<i64>().map(|n| (n & 0xff) as i32).unwrap_or(2),
                        None => self.last,
                    };
                    self.exiting = Some(code);
                    code
                }
                "sleep" => self.sleep(args, io).await,
                "ls" => self.ls(args, io).await,
                "test" => self.test(name, args, io).await,
                "[" => self.test(name, args, io).await,
                "mkdir" | "rm" | "touch" => self.files_cmd(name, args, io).await,
                "tar" => self.tar(args, io).await,
                "cd" => self.cd(args, io).await,
                "export" => {
                    for a in args {
                        if let Some((k, v)) = a.split_once('=') {
                            self.set_var(k, v.to_string());
                        }
                    }
                    0
                }
                "sh" | "bash" | "ash" | "dash" => self.sh(args, io).await,
                "head" | "tail" | "sort" | "wc" | "grep" => self.filter(name, args, io).await,
                other => {
                    let msg = format!("{other}: command not found\n");
                    self.err(io, &msg).await;
                    127
                }
            }
        })
    }

    async fn echo(&mut self, args: &[String], io: &mut Io) -> i32 {
        let mut newline = true;
        let mut escapes = false;
        let mut rest = args;
        while let Some(a) = rest.first() {
            match a.as_str() {
                "-n" => newline = false,
                "-e" => escapes = true,
                "-E" => escapes = false,
                "-ne" | "-en" => {
                    newline = false;
                    escapes = true;
                }
                _ => break,
            }
            rest = &rest[1..];
        }
        let mut text = rest.join(" ");
        if escapes {
            text = unescape(&text);
        }
        if newline {
            text.push('\n');
        }
        self.out(io, &text).await;
        0
    }

    async fn printf(&mut self, args: &[String], io: &mut Io) -> i32 {
        let Some(format) = args.first() else {
            self.err(io, "printf: usage: printf format [arguments]\n")
                .await;
            return 2;
        };
        let mut values = args[1..].iter();
        let mut out = String::new();
        let fmt = unescape(format);
        let mut chars = fmt.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('%') => out.push('%'),
                Some('s') | Some('d') | Some('i') => out.push_str(values.next().map_or("", |v| v)),
                Some(other) => {
                    out.push('%');
                    out.push(other);
                }
                None => out.push('%'),
            }
        }
        self.out(io, &out).await;
        0
    }

    async fn cat(&mut self, args: &[String], io: &mut Io) -> i32 {
        let files: Vec<&String> = args.iter().filter(|a| a.as_str() != "-u").collect();
        let mut status = 0;
        let stdin_only = [String::from("-")];
        let list: Vec<&String> = if files.is_empty() {
            stdin_only.iter().collect()
        } else {
            files
        };
        for f in list {
            if f == "-" {
                let mut src = std::mem::replace(&mut io.stdin, Src::Data(None));
                while let Some(chunk) = self.next_input(&mut src).await {
                    self.put(io, Stream::Stdout, &chunk).await;
                }
                io.stdin = src;
                continue;
            }
            let read = self.fs().read(&self.path(f)).map(<[u8]>::to_vec);
            match read {
                Ok(data) => self.put(io, Stream::Stdout, &data).await,
                Err(e) => {
                    let msg = format!("cat: {f}: {e}\n");
                    self.err(io, &msg).await;
                    status = 1;
                }
            }
        }
        status
    }

    async fn printenv(&mut self, args: &[String], io: &mut Io) -> i32 {
        if args.is_empty() {
            let text: String = self.env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
            self.out(io, &text).await;
            return 0;
        }
        let mut status = 0;
        for a in args {
            match self
                .env
                .iter()
                .find(|(k, _)| k == a)
                .map(|(_, v)| v.clone())
            {
                Some(v) => self.out(io, &format!("{v}\n")).await,
                None => status = 1,
            }
        }
        status
    }

    async fn sleep(&mut self, args: &[String], io: &mut Io) -> i32 {
        let Some(arg) = args.first() else {
            self.err(io, "sleep: missing operand\n").await;
            return 1;
        };
        let (num, unit) = match arg.char_indices().last() {
            Some((i, c)) if matches!(c, 's' | 'm' | 'h' | 'd') => (&arg[..i], c),
            _ => (arg.as_str(), 's'),
        };
        let Ok(n) = num.parse::<f64>() else {
            let msg = format!("sleep: invalid time interval '{arg}'\n");
            self.err(io, &msg).await;
            return 1;
        };
        let secs = n * match unit {
            'm' => 60.0,
            'h' => 3600.0,
            'd' => 86400.0,
            _ => 1.0,
        };
        if secs.is_finite() && secs > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(secs.min(1e9))).await;
        }
        0
    }

    async fn ls(&mut self, args: &[String], io: &mut Io) -> i32 {
        let (mut all, mut long) = (false, false);
        let mut paths = Vec::new();
        for a in args {
            match a.strip_prefix('-') {
                Some(flags) if !flags.is_empty() => {
                    all |= flags.contains('a') || flags.contains('A');
                    long |= flags.contains('l');
                }
                _ => paths.push(a.clone()),
            }
        }
        if paths.is_empty() {
            paths.push(".".into());
        }
        let mut status = 0;
        let many = paths.len() > 1;
        let mut text = String::new();
        let mut errors = String::new();
        for (i, p) in paths.iter().enumerate() {
            let comps = self.path(p);
            let fs = self.fs();
            match fs.get(&comps) {
                Err(e) => {
                    errors.push_str(&format!("ls: cannot access '{p}': {e}\n"));
                    status = 2;
                }
                Ok(Node::File { .. }) => text.push_str(&ls_line(fs.get(&comps).ok(), p, long)),
                Ok(Node::Dir { entries, .. }) => {
                    if many {
                        if i > 0 {
                            text.push('\n');
                        }
                        text.push_str(&format!("{p}:\n"));
                    }
                    if all {
                        text.push_str(&ls_line(fs.get(&comps).ok(), ".", long));
                        text.push_str(&ls_line(fs.get(&comps).ok(), "..", long));
                    }
                    for (name, node) in entries {
                        if !all && name.starts_with('.') {
                            continue;
                        }
                        text.push_str(&ls_line(Some(node), name, long));
                    }
                }
            }
        }
        self.err(io, &errors).await;
        self.out(io, &text).await;
        status
    }

    async fn test(&mut self, name: &str, args: &[String], io: &mut Io) -> i32 {
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        if name == "[" {
            if args.last() != Some(&"]") {
                self.err(io, "[: missing ']'\n").await;
                return 2;
            }
            args.pop();
        }
        let mut negate = false;
        if args.first() == Some(&"!") {
            negate = true;
            args.remove(0);
        }
        let result = {
            let fs = self.fs();
            let kind = |p: &str| fs.get(&components(&self.cwd, p)).ok().map(|n| n.is_dir());
            match args.as_slice() {
                [] => Some(false),
                [s] => Some(!s.is_empty()),
                ["-d", p] => Some(kind(p) == Some(true)),
                ["-f", p] => Some(kind(p) == Some(false)),
                ["-e", p] => Some(kind(p).is_some()),
                ["-s", p] => Some(
                    matches!(fs.get(&components(&self.cwd, p)), Ok(Node::File { data, .. }) if !data.is_empty()),
                ),
                ["-r" | "-w" | "-x", p] => Some(kind(p).is_some()),
                ["-z", s] => Some(s.is_empty()),
                ["-n", s] => Some(!s.is_empty()),
                [a, "=" | "==", b] => Some(a == b),
                [a, "!=", b] => Some(a != b),
                [a, op @ ("-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge"), b] => {
                    match (a.parse::<i64>(), b.parse::<i64>()) {
                        (Ok(x), Ok(y)) => Some(match *op {
                            "-eq" => x == y,
                            "-ne" => x != y,
                            "-lt" => x < y,
                            "-le" => x <= y,
                            "-gt" => x > y,
                            _ => x >= y,
                        }),
                        _ => None,
                    }
                }
                _ => None,
            }
        };
        match result {
            Some(r) => i32::from(r == negate),
            None => {
                self.err(io, &format!("{name}: syntax error\n")).await;
                2
            }
        }
    }

    async fn files_cmd(&mut self, name: &str, args: &[String], io: &mut Io) -> i32 {
        let flags: String = args
            .iter()
            .filter(|a| a.starts_with('-') && a.len() > 1)
            .map(|a| a[1..].to_string())
            .collect();
        let targets: Vec<&String> = args
            .iter()
            .filter(|a| !a.starts_with('-') || a.len() == 1)
            .collect();
        if targets.is_empty() {
            let msg = format!("{name}: missing operand\n");
            self.err(io, &msg).await;
            return 1;
        }
        let mut status = 0;
        for t in targets {
            let comps = self.path(t);
            let result = {
                let mut fs = self.fs();
                match name {
                    "mkdir" => fs.mkdir(&comps, flags.contains('p')),
                    "rm" => match fs.remove(&comps, flags.contains('r') || flags.contains('R')) {
                        Err(FsError::NotFound) if flags.contains('f') => Ok(()),
                        r => r,
                    },
                    _ => match fs.get(&comps) {
                        Ok(_) => Ok(()),
                        Err(FsError::NotFound) => fs.write(&comps, b"", true, 0o644),
                        Err(e) => Err(e),
                    },
                }
            };
            if let Err(e) = result {
                let msg = match name {
                    "mkdir" => format!("mkdir: can't create directory '{t}': {e}\n"),
                    "rm" => format!("rm: cannot remove '{t}': {e}\n"),
                    _ => format!("touch: cannot touch '{t}': {e}\n"),
                };
                self.err(io, &msg).await;
                status = 1;
            }
        }
        status
    }

    async fn tar(&mut self, args: &[String], io: &mut Io) -> i32 {
        let o = match super::tar::parse(args) {
            Ok(o) => o,
            Err(e) => {
                let msg = format!("{e}\nTry 'tar --help' or 'tar --usage' for more information.\n");
                self.err(io, &msg).await;
                return 2;
            }
        };
        if let Some(c) = o.compress {
            let tool = match c {
                'z' => "gzip",
                'j' => "bzip2",
                _ => "xz",
            };
            let msg = format!(
                "tar: {tool}: Cannot exec: No such file or directory\ntar: Error is not recoverable: exiting now\n"
            );
            self.err(io, &msg).await;
            return 2;
        }
        if o.file.as_deref().is_some_and(|f| f != "-") {
            self.err(
                io,
                "tar: only '-f -' (standard input or output) is simulated\n",
            )
            .await;
            return 2;
        }
        let cwd = match &o.dir {
            Some(d) => super::tar::absolute(&self.cwd, d),
            None => self.cwd.clone(),
        };
        match o.mode {
            Some('c') => {
                let created = super::tar::create(&self.fs(), &cwd, &o.paths);
                for n in &created.notices {
                    self.err(io, &format!("{n}\n")).await;
                }
                self.put(io, Stream::Stdout, &created.archive).await;
                if created.failed { 2 } else { 0 }
            }
            Some(m @ ('x' | 't')) => {
                let mut src = std::mem::replace(&mut io.stdin, Src::Data(None));
                let archive = self.read_all(&mut src).await;
                io.stdin = src;
                let result = if m == 'x' {
                    let dir = o.dir.clone().unwrap_or_else(|| ".".into());
                    let mut fs = self.fs();
                    super::tar::extract(&mut fs, &self.cwd, &dir, &archive, o.touch)
                } else {
                    super::tar::list(&archive)
                };
                match result {
                    Ok(names) => {
                        if o.verbose || m == 't' {
                            let text: String = names.iter().map(|n| format!("{n}\n")).collect();
                            self.out(io, &text).await;
                        }
                        0
                    }
                    Err(lines) => {
                        let text: String = lines.iter().map(|n| format!("{n}\n")).collect();
                        self.err(io, &text).await;
                        2
                    }
                }
            }
            _ => {
                self.err(io, "tar: You must specify one of the '-Acdtrux', '--delete' or '--test-label' options\nTry 'tar --help' or 'tar --usage' for more information.\n").await;
                2
            }
        }
    }

    /// A text filter ([`super::filters`]) over its files or its input.
    async fn filter(&mut self, name: &str, args: &[String], io: &mut Io) -> i32 {
        use super::filters;
        // Operands that are files: all but options and their values, and
        // grep's pattern.
        let mut files = Vec::new();
        let mut opts = Vec::new();
        let mut it = args.iter();
        let mut pattern_seen = name != "grep";
        while let Some(a) = it.next() {
            if a.starts_with('-') && a.len() > 1 {
                opts.push(a.clone());
                if (a == "-n" || a == "-c") && matches!(name, "head" | "tail") {
                    opts.extend(it.next().cloned());
                }
            } else if !pattern_seen {
                pattern_seen = true;
                opts.push(a.clone());
            } else {
                files.push(a.clone());
            }
        }
        let input = if files.is_empty() {
            let mut src = std::mem::replace(&mut io.stdin, Src::Data(None));
            let all = self.read_all(&mut src).await;
            io.stdin = src;
            all
        } else {
            let mut all = Vec::new();
            for f in &files {
                let read = self.fs().read(&self.path(f)).map(<[u8]>::to_vec);
                match read {
                    Ok(d) => all.extend(d),
                    Err(e) => {
                        let msg = format!("{name}: {f}: {e}\n");
                        self.err(io, &msg).await;
                        return 2;
                    }
                }
            }
            all
        };
        let result = match name {
            "sort" => Ok(filters::sort(&opts, &input)),
            "wc" => Ok(filters::wc(&opts, &input)),
            "grep" => filters::grep(&opts, &input),
            _ => filters::head_tail(name, &opts, &input),
        };
        match result {
            Ok(f) => {
                self.put(io, Stream::Stdout, &f.out).await;
                f.code
            }
            Err(usage) => {
                self.err(io, &format!("{usage}\n")).await;
                2
            }
        }
    }

    async fn cd(&mut self, args: &[String], io: &mut Io) -> i32 {
        let target = args.first().cloned().unwrap_or_else(|| self.var("HOME"));
        let comps = self.path(&target);
        let is_dir = self.fs().get(&comps).map(|n| n.is_dir());
        match is_dir {
            Ok(true) => {
                self.cwd = join(&comps);
                0
            }
            Ok(false) => {
                let msg = format!("sh: cd: can't cd to {target}: {}\n", FsError::NotDir);
                self.err(io, &msg).await;
                2
            }
            Err(e) => {
                let msg = format!("sh: cd: can't cd to {target}: {e}\n");
                self.err(io, &msg).await;
                2
            }
        }
    }

    async fn sh(&mut self, args: &[String], io: &mut Io) -> i32 {
        let mut rest = args;
        while let Some(a) = rest.first() {
            match a.as_str() {
                "-c" => {
                    let Some(script) = rest.get(1) else {
                        self.err(io, "sh: -c requires an argument\n").await;
                        return 2;
                    };
                    let code = self.script(script, io).await;
                    self.exiting = None;
                    return code;
                }
                "-e" | "-x" | "-l" | "-i" | "-s" | "--login" => rest = &rest[1..],
                _ => break,
            }
        }
        if let Some(file) = rest.first() {
            let text = self.fs().read(&self.path(file)).map(<[u8]>::to_vec);
            return match text {
                Ok(t) => {
                    let code = self.script(&String::from_utf8_lossy(&t), io).await;
                    self.exiting = None;
                    code
                }
                Err(e) => {
                    let msg = format!("sh: can't open '{file}': {e}\n");
                    self.err(io, &msg).await;
                    2
                }
            };
        }
        // An interactive shell: each complete line of stdin runs in turn.
        let mut src = std::mem::replace(&mut io.stdin, Src::Data(None));
        let mut line = Vec::new();
        let mut code = 0;
        'read: while let Some(chunk) = self.next_input(&mut src).await {
            line.extend_from_slice(&chunk);
            while let Some(nl) = line.iter().position(|b| *b == b'\n') {
                let text = String::from_utf8_lossy(&line[..nl]).into_owned();
                line.drain(..=nl);
                code = self.script(&text, io).await;
                if self.exiting.is_some() {
                    break 'read;
                }
            }
        }
        if self.exiting.is_none() && !line.is_empty() {
            code = self.script(&String::from_utf8_lossy(&line), io).await;
        }
        io.stdin = src;
        self.exiting = None;
        code
    }

    /// Runs a script; returns the status of its last command.
    async fn script(&mut self, src: &str, io: &mut Io) -> i32 {
        let script = match shell::parse(src) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!("sh: {e}\n");
                self.err(io, &msg).await;
                self.last = 2;
                return 2;
            }
        };
        for (when, pipeline) in script {
            let run = match when {
                When::Always => true,
                When::IfOk => self.last == 0,
                When::IfFailed => self.last != 0,
            };
            if run {
                self.last = self.pipeline(&pipeline, io).await;
            }
            if let Some(code) = self.exiting {
                return code;
            }
        }
        self.last
    }

    async fn pipeline(&mut self, cmds: &[Simple], io: &mut Io) -> i32 {
        let mut input: Option<Vec<u8>> = None;
        let mut code = 0;
        for (i, cmd) in cmds.iter().enumerate() {
            let last = i + 1 == cmds.len();
            let mut sub = Io {
                stdin: match input.take() {
                    Some(data) => Src::Data(Some(data)),
                    None if i == 0 => std::mem::replace(&mut io.stdin, Src::Data(None)),
                    None => Src::Data(None),
                },
                stdout: if last {
                    std::mem::replace(&mut io.stdout, Dst::Buf(Vec::new()))
                } else {
                    Dst::Buf(Vec::new())
                },
                stderr: std::mem::replace(&mut io.stderr, Dst::Buf(Vec::new())),
            };
            code = self.simple(cmd, &mut sub).await;
            if i == 0
                && let Src::Stdin = sub.stdin
            {
                io.stdin = Src::Stdin;
            }
            io.stderr = sub.stderr;
            if last {
                io.stdout = sub.stdout;
            } else if let Dst::Buf(b) = sub.stdout {
                input = Some(b);
            }
            if self.exiting.is_some() {
                break;
            }
        }
        code
    }

    /// One command with its assignments and redirections.
    async fn simple(&mut self, cmd: &Simple, io: &mut Io) -> i32 {
        let mut words: Vec<String> = cmd.words.iter().filter_map(|w| self.expand(w)).collect();
        // Leading NAME=value words are assignments.
        while let Some(w) = words.first() {
            match w.split_once('=') {
                Some((k, _))
                    if !k.is_empty()
                        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                {
                    let w = words.remove(0);
                    if let Some((k, v)) = w.split_once('=') {
                        self.set_var(k, v.to_string());
                    }
                }
                _ => break,
            }
        }
        // Redirections: outputs to files are buffered and written at the end.
        let mut files_out: Vec<(u8, Vec<String>, bool)> = Vec::new();
        let saved_out = std::mem::replace(&mut io.stdout, Dst::Same);
        let saved_err = std::mem::replace(&mut io.stderr, Dst::Same);
        let mut out = saved_out;
        let mut err = saved_err;
        let mut restore: (Option<Dst>, Option<Dst>) = (None, None);
        let mut saved_in: Option<Src> = None;
        for r in &cmd.redirects {
            match r {
                Redirect::To { fd, append, target } => {
                    let path = self.expand(target).unwrap_or_default();
                    let comps = self.path(&path);
                    if let Err(e) = self.check_writable(&comps) {
                        let msg = format!("sh: can't create {path}: {e}\n");
                        io.stdout = restore.0.take().unwrap_or(out);
                        io.stderr = restore.1.take().unwrap_or(err);
                        self.err(io, &msg).await;
                        return 1;
                    }
                    files_out.push((*fd, comps, *append));
                    let buf = Dst::Buf(Vec::new());
                    if *fd == 2 {
                        restore.1.get_or_insert(std::mem::replace(&mut err, buf));
                    } else {
                        restore.0.get_or_insert(std::mem::replace(&mut out, buf));
                    }
                }
                Redirect::From(target) => {
                    let path = self.expand(target).unwrap_or_default();
                    let data = self.fs().read(&self.path(&path)).map(<[u8]>::to_vec);
                    match data {
                        Ok(d) => {
                            saved_in = Some(std::mem::replace(&mut io.stdin, Src::Data(Some(d))));
                        }
                        Err(e) => {
                            io.stdout = restore.0.take().unwrap_or(out);
                            io.stderr = restore.1.take().unwrap_or(err);
                            let msg = format!("sh: can't open {path}: {e}\n");
                            self.err(io, &msg).await;
                            return 1;
                        }
                    }
                }
                Redirect::ErrToOut => {
                    restore
                        .1
                        .get_or_insert(std::mem::replace(&mut err, Dst::Same));
                }
                Redirect::OutToErr => {
                    // `>&2`: stdout goes where stderr goes.
                    let to = match &err {
                        Dst::Real(s) => Dst::Real(*s),
                        _ => Dst::Real(Stream::Stderr),
                    };
                    restore.0.get_or_insert(std::mem::replace(&mut out, to));
                }
            }
        }
        let mut sub = Io {
            stdin: std::mem::replace(&mut io.stdin, Src::Data(None)),
            stdout: out,
            stderr: err,
        };
        let code = if words.is_empty() {
            0
        } else {
            self.command(&words, &mut sub).await
        };
        io.stdin = saved_in.unwrap_or(sub.stdin);
        // Write redirected output to its files, then restore the streams.
        let (mut out, mut err) = (sub.stdout, sub.stderr);
        for (fd, comps, append) in files_out {
            let data = match if fd == 2 { &mut err } else { &mut out } {
                Dst::Buf(b) => std::mem::take(b),
                _ => Vec::new(),
            };
            let _ = self.fs().write(&comps, &data, append, 0o644);
        }
        io.stdout = restore.0.unwrap_or(out);
        io.stderr = restore.1.unwrap_or(err);
        code
    }

    fn check_writable(&self, comps: &[String]) -> Result<(), FsError> {
        self.fs().check_write(comps)
    }
}

fn ls_line(node: Option<&Node>, name: &str, long: bool) -> String {
    if !long {
        return format!("{name}\n");
    }
    let (kind, mode, size) = match node {
        Some(Node::Dir { mode, .. }) => ('d', *mode, 4096),
        Some(Node::File { mode, data, .. }) => ('-', *mode, data.len()),
        None => ('-', 0o644, 0),
    };
    let mut perms = String::new();
    for shift in [6, 3, 0] {
        let bits = (mode >> shift) & 7;
        perms.push(if bits & 4 != 0 { 'r' } else { '-' });
        perms.push(if bits & 2 != 0 { 'w' } else { '-' });
        perms.push(if bits & 1 != 0 { 'x' } else { '-' });
    }
    format!("{kind}{perms}    1 root     root     {size:>9} {name}\n")
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('0') => out.push('\0'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run_with(argv: &[&str], input: Option<&str>) -> (i32, String, String, Arc<Mutex<Fs>>) {
        let fs = Arc::new(Mutex::new(Fs::new()));
        let (tx, mut rx) = mpsc::channel(64);
        let stdin = input.map(|text| {
            let (itx, irx) = mpsc::unbounded_channel();
            let _ = itx.send(Bytes::from(text.to_string()));
            irx
        });
        let env = vec![("HOME".to_string(), "/root".to_string())];
        let mut p = Process::new(fs.clone(), env, "/".into(), "web".into(), stdin, tx);
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let code = p.run(&argv).await;
        drop(p);
        let (mut out, mut err) = (String::new(), String::new());
        while let Some((s, b)) = rx.recv().await {
            let t = String::from_utf8_lossy(&b).into_owned();
            match s {
                Stream::Stdout => out.push_str(&t),
                Stream::Stderr => err.push_str(&t),
            }
        }
        (code, out, err, fs)
    }

    #[tokio::test]
    async fn commands_and_shell() {
        assert_eq!(
            run_with(&["echo", "hi", "there"], None).await.1,
            "hi there\n"
        );
        assert_eq!(run_with(&["cat"], Some("abc")).await.1, "abc");
        let (code, _, err, _) = run_with(&["nope", "x"], None).await;
        assert_eq!((code, err.as_str()), (127, "nope: command not found\n"));
        assert_eq!(run_with(&["sh", "-c", "exit 3"], None).await.0, 3);
        assert_eq!(
            run_with(&["sh", "-c", "false || echo $?; true && echo ok"], None)
                .await
                .1,
            "1\nok\n"
        );
        let (_, out, _, fs) = run_with(
            &[
                "sh",
                "-c",
                "echo a > /tmp/f; echo b >> /tmp/f; cat /tmp/f | cat",
            ],
            None,
        )
        .await;
        assert_eq!(out, "a\nb\n");
        assert!(files::lock(&fs).read(&components("/", "/tmp/f")).is_ok());
        assert_eq!(
            run_with(&["sh", "-c", "cd /tmp && pwd"], None).await.1,
            "/tmp\n"
        );
        assert_eq!(run_with(&["test", "-d", "/tmp"], None).await.0, 0);
        assert_eq!(run_with(&["/bin/sh", "-c", "[ -f /tmp ]"], None).await.0, 1);
        let (code, _, err, _) = run_with(&["cat", "/missing"], None).await;
        assert_eq!(
            (code, err.as_str()),
            (1, "cat: /missing: No such file or directory\n")
        );
        assert_eq!(
            run_with(&["sh", "-c", "echo err >&2"], None).await.2,
            "err\n"
        );
        let sorted = run_with(&["sh", "-c", "printf 'b\\na\\n' | sort | head -n 1"], None).await;
        assert_eq!(sorted.1, "a\n");
        assert_eq!(
            run_with(&["sh", "-c", "env | grep -c ^HOME="], None)
                .await
                .1,
            "1\n"
        );
        assert_eq!(
            run_with(&["sh"], Some("echo one\nexit 4\necho two\n"))
                .await
                .0,
            4
        );
    }
}
