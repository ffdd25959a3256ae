//! The HTTP side of `--serve`: one thread, one `poll(2)` loop, std sockets.
//!
//! Why not a crate: the endpoint answers two GET paths with a pre-rendered
//! body, and what it needs is bounds, which tiny_http (used before) does not
//! offer: it buffered a request header of any size (a 300 MB header took
//! 655 MB), spawned a thread per connection and panicked when the spawn
//! failed under an fd or pids limit, which silently ended the listener.
//! The maintained blocking alternatives are built on it (rouille) or bring
//! hyper's stack for two paths. A single poll loop has every bound by
//! construction:
//!
//! - **header size**: at most [`Limits::max_header`] bytes are buffered per
//!   connection; a longer header gets `431` and the connection is closed;
//! - **concurrency**: at most [`Limits::max_conns`] connections are held;
//!   when full, the oldest one still sending its request is dropped for the
//!   newcomer, so idle half-requests cannot starve a scrape;
//! - **time**: every connection has [`Limits::timeout`] in total to send its
//!   request and read the answer;
//! - **threads**: none are created after start, so a pids limit cannot hit;
//!   running out of file descriptors pauses `accept` briefly instead of
//!   ending the loop;
//! - **methods**: GET and HEAD; anything else is `405`.
//!
//! Responses always close the connection (`Connection: close`), which
//! Prometheus handles and which keeps the state machine small. If the
//! listening socket itself fails, [`run`] returns the error and `--serve`
//! exits non-zero instead of running on without a listener.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Resource bounds of the server.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_conns: usize,
    pub max_header: usize,
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_conns: 64,
            max_header: 8 << 10,
            timeout: Duration::from_secs(10),
        }
    }
}

/// Descriptors left for the rest of nettop (the sampler's /proc reads)
/// when the connection table is sized to the fd limit.
const FD_RESERVE: usize = 24;

impl Limits {
    /// Shrinks `max_conns` so that a full connection table leaves
    /// [`FD_RESERVE`] descriptors free under the process's RLIMIT_NOFILE:
    /// a connection flood must not starve the sampler of descriptors (it
    /// could then not read /proc, and `--serve` would stop).
    pub fn fit_fd_limit(mut self) -> Limits {
        let mut rl = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit struct we own.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
            return self;
        }
        let open = std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count);
        let soft = usize::try_from(rl.rlim_cur).unwrap_or(usize::MAX);
        let free = soft.saturating_sub(open.saturating_add(FD_RESERVE));
        self.max_conns = self.max_conns.min(free).max(1);
        self
    }
}

/// What the handler sees of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub method: String,
    /// Path without the query string.
    pub path: String,
    /// `Accept` header, if any.
    pub accept: Option<String>,
}

/// A response; the body is shared so a scrape body is never copied per
/// connection.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Arc<[u8]>,
}

impl Response {
    pub fn text(status: u16, body: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: Arc::from(body.as_bytes()),
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

/// Bytes read and discarded after answering, so that closing a socket with
/// unread input (which makes the kernel send a reset) does not destroy the
/// answer before the client reads it.
const DRAIN_MAX: usize = 64 << 10;
/// How long `accept` pauses when the process is out of file descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// Longest single poll, so the stop flag is seen promptly.
const POLL_SLICE: Duration = Duration::from_millis(100);

enum State {
    Reading(Vec<u8>),
    Writing {
        head: Vec<u8>,
        body: Option<Arc<[u8]>>,
        sent: usize,
    },
    Draining(usize),
}

struct Conn {
    stream: TcpStream,
    deadline: Instant,
    state: State,
}

impl Conn {
    fn reading(&self) -> bool {
        matches!(self.state, State::Reading(_))
    }

    fn respond(&mut self, r: &Response, head_only: bool) {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            r.status,
            reason(r.status),
            r.content_type,
            r.body.len()
        );
        if r.status == 405 {
            head.push_str("Allow: GET, HEAD\r\n");
        }
        head.push_str("\r\n");
        self.state = State::Writing {
            head: head.into_bytes(),
            body: (!head_only).then(|| Arc::clone(&r.body)),
            sent: 0,
        };
    }

    /// Reads what is available; `false` when the connection is finished.
    fn on_readable(&mut self, limits: &Limits, handler: &dyn Fn(&Request) -> Response) -> bool {
        let mut chunk = [0u8; 4096];
        loop {
            let n = match self.stream.read(&mut chunk) {
                Ok(0) => return !self.reading() && !matches!(self.state, State::Draining(_)),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return false,
            };
            match &mut self.state {
                State::Reading(buf) => {
                    let room = limits.max_header.saturating_sub(buf.len());
                    buf.extend_from_slice(&chunk[..n.min(room)]);
                    if let Some(end) = find_end(buf) {
                        let (resp, head_only) = answer(&buf[..end], handler);
                        self.respond(&resp, head_only);
                        return true;
                    }
                    if buf.len() >= limits.max_header {
                        let msg = format!("request header over {} bytes\n", limits.max_header);
                        self.respond(&Response::text(431, &msg), false);
                        return true;
                    }
                }
                // Input after the request (a body we do not read) is
                // discarded, within bounds.
                State::Writing { .. } => {}
                State::Draining(left) => {
                    if n >= *left {
                        return false;
                    }
                    *left -= n;
                }
            }
        }
    }

    /// Writes what the socket takes; `false` when the connection is finished.
    fn on_writable(&mut self) -> bool {
        loop {
            let State::Writing { head, body, sent } = &mut self.state else {
                return true;
            };
            let body_len = body.as_ref().map_or(0, |b| b.len());
            let total = head.len() + body_len;
            if *sent >= total {
                let _ = self.stream.shutdown(Shutdown::Write);
                self.state = State::Draining(DRAIN_MAX);
                return true;
            }
            let part: &[u8] = if *sent < head.len() {
                &head[*sent..]
            } else {
                match body {
                    Some(b) => &b[*sent - head.len()..],
                    None => &[],
                }
            };
            match self.stream.write(part) {
                Ok(0) => return false,
                Ok(n) => *sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }
}

/// End of the header block (`\r\n\r\n`, or bare `\n\n` from sloppy clients).
fn find_end(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Parses a complete header block and picks the response. Returns whether
/// only the head is sent (HEAD).
fn answer(head: &[u8], handler: &dyn Fn(&Request) -> Response) -> (Response, bool) {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split('\n').map(|l| l.trim_end_matches('\r'));
    let first = lines.next().unwrap_or("");
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return (Response::text(400, "malformed request line\n"), false);
    };
    if !version.starts_with("HTTP/1.") {
        return (Response::text(505, "HTTP/1.x only\n"), false);
    }
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return (Response::text(405, "only GET and HEAD are served\n"), false);
    }
    let accept = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("accept"))
        .map(|(_, v)| v.trim().to_string());
    let req = Request {
        method: method.to_string(),
        path: target.split('?').next().unwrap_or("").to_string(),
        accept,
    };
    (handler(&req), head_only)
}

/// Errors of `accept(2)` that concern one connection or are transient.
fn accept_transient(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::ECONNABORTED
                | libc::EINTR
                | libc::EPROTO
                | libc::EPERM
                | libc::ENETDOWN
                | libc::ENOPROTOOPT
                | libc::EHOSTDOWN
                | libc::ENONET
                | libc::EHOSTUNREACH
                | libc::EOPNOTSUPP
                | libc::ENETUNREACH
        )
    )
}

/// Out of descriptors or memory: wait for connections to close.
fn accept_exhausted(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Serves until `stop` is set. Returns an error only when the listening
/// socket fails (the endpoint is then gone, and the caller must say so).
pub fn run(
    listener: &TcpListener,
    handler: &dyn Fn(&Request) -> Response,
    stop: &AtomicBool,
    limits: &Limits,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let mut conns: Vec<Conn> = Vec::new();
    let mut paused_until: Option<Instant> = None;
    let mut warned_exhausted = false;
    let mut fds: Vec<libc::pollfd> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        conns.retain(|c| c.deadline > now);
        if paused_until.is_some_and(|t| now >= t) {
            paused_until = None;
        }
        // The listener is watched unless accept is paused or every slot
        // holds a connection that is already being answered.
        let can_evict = conns.iter().any(Conn::reading);
        let listen = paused_until.is_none() && (conns.len() < limits.max_conns || can_evict);
        fds.clear();
        fds.push(libc::pollfd {
            fd: listener.as_raw_fd(),
            events: if listen { libc::POLLIN } else { 0 },
            revents: 0,
        });
        for c in &conns {
            let events = match c.state {
                State::Writing { .. } => libc::POLLOUT,
                _ => libc::POLLIN,
            };
            fds.push(libc::pollfd {
                fd: c.stream.as_raw_fd(),
                events,
                revents: 0,
            });
        }
        let next_deadline = conns.iter().map(|c| c.deadline).min();
        let wait = next_deadline
            .map_or(POLL_SLICE, |d| d.saturating_duration_since(now))
            .min(POLL_SLICE)
            .max(Duration::from_millis(1));
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs that
        // lives across the call; poll only writes their `revents`.
        let rc = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                wait.as_millis() as libc::c_int,
            )
        };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // Existing connections first (their indices match `fds[1..]`).
        let mut keep = vec![true; conns.len()];
        for (i, c) in conns.iter_mut().enumerate() {
            let re = fds[i + 1].revents;
            if re == 0 {
                continue;
            }
            if re & libc::POLLNVAL != 0 {
                keep[i] = false;
                continue;
            }
            let ok = if re & libc::POLLOUT != 0 {
                c.on_writable()
            } else {
                c.on_readable(limits, handler)
            };
            // A response may be ready to go at once.
            keep[i] = ok && (!matches!(c.state, State::Writing { .. }) || c.on_writable());
        }
        let mut k = keep.into_iter();
        conns.retain(|_| k.next().unwrap_or(false));

        let lre = fds[0].revents;
        if lre & libc::POLLNVAL != 0 {
            return Err(std::io::Error::other("the listening socket was closed"));
        }
        // POLLHUP/POLLERR: accept() below reports what happened.
        if lre & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) == 0 {
            continue;
        }
        loop {
            if conns.len() >= limits.max_conns {
                // Make room: drop the oldest connection still sending its
                // request (a slow or idle client), never one being answered.
                let Some(oldest) = conns
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.reading())
                    .min_by_key(|(_, c)| c.deadline)
                    .map(|(i, _)| i)
                else {
                    break;
                };
                conns.remove(oldest);
            }
            match listener.accept() {
                Ok((stream, _)) => {
                    if stream.set_nonblocking(true).is_err() {
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    conns.push(Conn {
                        stream,
                        deadline: Instant::now() + limits.timeout,
                        state: State::Reading(Vec::new()),
                    });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if accept_transient(&e) => {}
                Err(e) if accept_exhausted(&e) => {
                    if !warned_exhausted {
                        warned_exhausted = true;
                        log::warn!(
                            "--serve: cannot accept connections ({e}); \
                             pausing accept until connections close"
                        );
                    }
                    paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn handler(r: &Request) -> Response {
        match r.path.as_str() {
            "/metrics" => Response::text(200, "metrics\n"),
            _ => Response::text(404, "not found\n"),
        }
    }

    fn get(addr: std::net::SocketAddr, raw: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(raw).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    fn with_server(limits: Limits, f: impl FnOnce(std::net::SocketAddr)) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let stop = AtomicBool::new(false);
        /// Stops the server even when the test body panics, so a failing
        /// test fails instead of hanging in the scope's join.
        struct StopOnDrop<'a>(&'a AtomicBool);
        impl Drop for StopOnDrop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        std::thread::scope(|s| {
            let h = s.spawn(|| run(&l, &handler, &stop, &limits));
            let guard = StopOnDrop(&stop);
            f(addr);
            drop(guard);
            h.join().unwrap().unwrap();
        });
    }

    #[test]
    fn answers_get_head_and_refuses_the_rest() {
        with_server(Limits::default(), |a| {
            let r = get(a, b"GET /metrics?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
            assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
            assert!(r.ends_with("\r\n\r\nmetrics\n"), "{r}");
            let r = get(a, b"HEAD /metrics HTTP/1.0\r\n\r\n");
            assert!(
                r.contains("Content-Length: 8\r\n") && r.ends_with("\r\n\r\n"),
                "{r}"
            );
            let r = get(a, b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
            assert!(
                r.starts_with("HTTP/1.1 405 ") && r.contains("Allow: GET, HEAD"),
                "{r}"
            );
            assert!(get(a, b"GET /x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404 "));
            assert!(get(a, b"garbage\r\n\r\n").starts_with("HTTP/1.1 400 "));
            assert!(get(a, b"GET / SPDY/3\r\n\r\n").starts_with("HTTP/1.1 505 "));
        });
    }

    #[test]
    fn long_headers_get_431_and_slow_clients_time_out() {
        let limits = Limits {
            max_conns: 4,
            max_header: 256,
            timeout: Duration::from_millis(300),
        };
        with_server(limits, |a| {
            let mut big = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
            big.extend(std::iter::repeat_n(b'a', 1000));
            assert!(get(a, &big).starts_with("HTTP/1.1 431 "));
            // A client that never finishes its request is dropped.
            let mut s = TcpStream::connect(a).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let t0 = Instant::now();
            let mut out = Vec::new();
            let _ = s.read_to_end(&mut out);
            assert!(out.is_empty());
            assert!(t0.elapsed() < Duration::from_secs(3));
        });
    }

    #[test]
    fn a_full_table_evicts_idle_clients_for_new_ones() {
        let limits = Limits {
            max_conns: 4,
            ..Limits::default()
        };
        with_server(limits, |a| {
            let idle: Vec<TcpStream> = (0..20)
                .map(|_| {
                    let mut s = TcpStream::connect(a).unwrap();
                    s.write_all(b"GET /").unwrap();
                    s
                })
                .collect();
            std::thread::sleep(Duration::from_millis(200));
            let r = get(a, b"GET /metrics HTTP/1.1\r\n\r\n");
            assert!(r.starts_with("HTTP/1.1 200 "), "{r}");
            drop(idle);
        });
    }

    #[test]
    fn a_dead_listener_is_an_error() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        // SAFETY: shutdown(2) on a socket we own; the listener stays open
        // but stops listening, as when the socket fails underneath us.
        unsafe { libc::shutdown(l.as_raw_fd(), libc::SHUT_RDWR) };
        let stop = AtomicBool::new(false);
        let r = run(&l, &handler, &stop, &Limits::default());
        assert!(r.is_err(), "{r:?}");
    }
}
