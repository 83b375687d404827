//! A real S3-protocol server for the tests (s3s-fs from crates.io, started per test on a
//! free port with its own root folder) and a fault-injecting proxy of our own that sits
//! between client and server, counting requests and bytes, and answering 500 or
//! dropping the connection when told to.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rastore::remote::RemoteOptions;

pub const KEY: &str = "rastore-test";
pub const SECRET: &str = "rastore-test-secret";
pub const BUCKET: &str = "bkt";

/// The s3s-fs binary: `$RASTORE_S3S_FS`, else on `PATH`, else cargo's bin folder.
pub fn binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("RASTORE_S3S_FS") {
        return Some(PathBuf::from(p));
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("CARGO_HOME") {
        dirs.push(PathBuf::from(home).join("bin"));
    }
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    dirs.into_iter()
        .map(|d| d.join("s3s-fs"))
        .find(|p| p.is_file())
}

/// The server's root folder, and its name as the server gives it. The server is a
/// Linux program also when the tests run under Wine, which shows the Linux root as
/// drive `Z:`: there the folder is made under `Z:\tmp`, and named `/tmp/...`.
fn server_root() -> (tempfile::TempDir, PathBuf) {
    #[cfg(windows)]
    {
        let d = tempfile::tempdir_in(r"Z:\tmp").expect("server root");
        let shown = d.path().to_string_lossy();
        let unix = shown.trim_start_matches("Z:").replace('\\', "/");
        (d, PathBuf::from(unix))
    }
    #[cfg(not(windows))]
    {
        let d = tempfile::tempdir().expect("server root");
        let p = d.path().to_path_buf();
        (d, p)
    }
}

pub struct Server {
    child: Child,
    pub port: u16,
    pub root: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Server {
    /// Starts a server, or returns `None` (printing why) when s3s-fs is not installed;
    /// in CI (`CI` or `RASTORE_REQUIRE_S3` set) its absence is a failure.
    pub fn start() -> Option<Server> {
        let Some(bin) = binary() else {
            assert!(
                std::env::var_os("CI").is_none() && std::env::var_os("RASTORE_REQUIRE_S3").is_none(),
                "s3s-fs is not installed: .ci/run installs it with `cargo install s3s-fs --version 0.14.1 --features binary --locked`"
            );
            crate::common::skipped("no S3 test server, s3s-fs (scripts/test-all installs it)");
            return None;
        };
        let (root, served) = server_root();
        std::fs::create_dir(root.path().join(BUCKET)).expect("bucket");
        let port = free_port();
        let child = server_command(&bin, port, &served)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start s3s-fs");
        let server = Server { child, port, root };
        for _ in 0..200 {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(server);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        drop(server);
        panic!("s3s-fs did not listen on port {port}");
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment `ra` needs to reach this server (or `endpoint`).
    pub fn env(endpoint: &str) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", endpoint.to_string()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", KEY.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET.into()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// Client options for `endpoint`, with `retries`.
    pub fn options(endpoint: &str, retries: usize) -> RemoteOptions {
        RemoteOptions {
            retries,
            timeout: Duration::from_secs(20),
            ..RemoteOptions::for_endpoint(endpoint, KEY, SECRET)
        }
    }

    /// The file that holds object `key` (objects are plain files under the root).
    pub fn object(&self, key: &str) -> PathBuf {
        self.root.path().join(BUCKET).join(key)
    }

    /// Multipart uploads still pending (s3s-fs keeps `.upload-ID.json` files).
    pub fn pending_uploads(&self) -> Vec<String> {
        list(self.root.path())
            .into_iter()
            .filter(|n| n.starts_with(".upload"))
            .collect()
    }
}

fn list(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// The command that starts s3s-fs on `port` over the folder it names `served`.
#[cfg(not(windows))]
fn server_command(bin: &Path, port: u16, served: &Path) -> Command {
    let mut c = Command::new(bin);
    c.args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--access-key", KEY, "--secret-key", SECRET])
        .arg(served);
    c
}

/// Under Wine, s3s-fs (a Linux program) is started by a Linux shell, which leaves its
/// process id in the root folder: a Windows process cannot end a Linux one, `kill`
/// can (and `timeout` ends it in any case).
#[cfg(windows)]
fn server_command(bin: &Path, port: u16, served: &Path) -> Command {
    let bin = bin.to_string_lossy();
    let unix_bin = bin.trim_start_matches("Z:").replace('\\', "/");
    let script = format!(
        "echo $$ > {0}/server.pid; exec timeout 900 {unix_bin} --host 127.0.0.1 --port {port} \
         --access-key {KEY} --secret-key {SECRET} {0} >/dev/null 2>&1 </dev/null",
        served.display()
    );
    let mut c = Command::new("/bin/sh");
    c.args(["-c", &script]);
    c
}

impl Drop for Server {
    fn drop(&mut self) {
        #[cfg(windows)]
        if let Ok(pid) = std::fs::read_to_string(self.root.path().join("server.pid")) {
            let _ = Command::new("/bin/kill").arg(pid.trim()).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the proxy does to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Answer 500 Internal Server Error without asking the server.
    Status500,
    /// Close the connection without answering.
    Drop,
}

/// One request as the proxy saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub target: String,
    pub range: Option<String>,
    /// Bytes of the response body the client got.
    pub body_bytes: u64,
    pub fault: Option<Fault>,
}

/// `rule(n, method, target, range)` for the `n`-th request (from 0).
type Rule = Box<dyn FnMut(usize, &str, &str, Option<&str>) -> Option<Fault> + Send>;

/// A proxy on its own port: forwards each request to the server on a fresh connection
/// (and closes the client's after the answer), unless `rule(n, method, target)` says
/// to fail the `n`-th request.
pub struct Proxy {
    pub port: u16,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    rule: Arc<Mutex<Rule>>,
    count: Arc<AtomicUsize>,
}

impl Proxy {
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("proxy port");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rule: Arc<Mutex<Rule>> = Arc::new(Mutex::new(Box::new(|_, _, _, _| None)));
        let count = Arc::new(AtomicUsize::new(0));
        let (s, r, c) = (seen.clone(), rule.clone(), count.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (s, r, c) = (s.clone(), r.clone(), c.clone());
                std::thread::spawn(move || serve(conn, upstream, &s, &r, &c));
            }
        });
        Proxy {
            port,
            seen,
            rule,
            count,
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Fails requests as `rule(n, method, target, range)` says, `n` counting from 0 now.
    pub fn set_rule(
        &self,
        rule: impl FnMut(usize, &str, &str, Option<&str>) -> Option<Fault> + Send + 'static,
    ) {
        self.count.store(0, Ordering::SeqCst);
        *self.rule.lock().unwrap() = Box::new(rule);
    }

    pub fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// Reads one HTTP/1.1 message head (up to the blank line) and its body by
/// Content-Length; returns the head's lines and the body.
fn read_message(r: &mut BufReader<TcpStream>) -> Option<(Vec<String>, Vec<u8>)> {
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            break;
        }
        head.push(line);
    }
    let len = header(&head, "content-length")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).ok()?;
    Some((head, body))
}

fn header(head: &[String], name: &str) -> Option<String> {
    head.iter().skip(1).find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

fn serve(
    client: TcpStream,
    upstream: u16,
    seen: &Mutex<Vec<Seen>>,
    rule: &Mutex<Rule>,
    count: &AtomicUsize,
) {
    let mut reader = BufReader::new(client.try_clone().expect("clone"));
    let mut client = client;
    // One request per connection: the answer says `Connection: close`.
    let Some((head, body)) = read_message(&mut reader) else {
        return;
    };
    let mut parts = head[0].split(' ');
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    let n = count.fetch_add(1, Ordering::SeqCst);
    let range = header(&head, "range");
    let fault = (rule.lock().unwrap())(n, &method, &target, range.as_deref());
    let mut record = Seen {
        method: method.clone(),
        target: target.clone(),
        range,
        body_bytes: 0,
        fault,
    };
    // Each request is recorded before its answer goes back, so that a client that
    // has its answer finds it in the record.
    match fault {
        Some(Fault::Drop) => {
            seen.lock().unwrap().push(record);
            let _ = client.shutdown(Shutdown::Both);
        }
        Some(Fault::Status500) => {
            seen.lock().unwrap().push(record);
            let msg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InternalError</Code><Message>injected</Message></Error>";
            let _ = write!(
                client,
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{msg}",
                msg.len()
            );
        }
        None => {
            let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)) else {
                return;
            };
            let mut out = format!("{}\r\n", head[0]);
            for l in &head[1..] {
                if !l.to_ascii_lowercase().starts_with("connection:") {
                    out.push_str(l);
                    out.push_str("\r\n");
                }
            }
            out.push_str("Connection: close\r\n\r\n");
            if up.write_all(out.as_bytes()).is_err() || up.write_all(&body).is_err() {
                return;
            }
            let mut answer = Vec::new();
            let _ = up.read_to_end(&mut answer);
            if let Some(split) = answer.windows(4).position(|w| w == b"\r\n\r\n") {
                record.body_bytes = (answer.len() - split - 4) as u64;
            }
            seen.lock().unwrap().push(record);
            let _ = client.write_all(&answer);
            let _ = client.shutdown(Shutdown::Both);
        }
    }
}
