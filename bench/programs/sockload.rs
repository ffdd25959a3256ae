//! Socket load for the traffic benchmark (`bench/traffic.sh`): many small
//! send and receive calls, so the cost nettop's socket tracepoints add to
//! every call shows in what the load achieves.
//!
//! ```text
//! sockload udp-send RATE [--secs S] [--len N] [--to ADDR:PORT]
//! sockload udp-sink ADDR:PORT [--secs S]
//! sockload tcp-rr SECS [--len N] [--to ADDR:PORT]
//! sockload tcp-serve ADDR:PORT [--secs S] [--len N]
//! ```
//!
//! - `udp-send RATE`: LEN-byte datagrams (default 64) at RATE sends/s
//!   (0 = flat out) for S seconds (default 10). Without `--to` a reader
//!   thread of its own on 127.0.0.1 receives them, so the process makes
//!   both the send and the receive calls. Prints what it achieved.
//! - `udp-sink`: receives datagrams on ADDR:PORT for S seconds (default
//!   10) and prints how many.
//! - `tcp-rr SECS`: request/response of LEN bytes (default 32) over one
//!   TCP connection, one message in flight: the client sends, the server
//!   answers, the client waits for the answer. Without `--to` the server
//!   is a thread of its own on 127.0.0.1. Prints transactions/s and the
//!   send+receive calls/s of both ends.
//! - `tcp-serve`: the server end alone, for a client in another network
//!   namespace; answers every connection until S seconds pass.
//!
//! Output: one JSON object on stdout. Pin with `taskset`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const USAGE: &str = "usage: sockload udp-send RATE [--secs S] [--len N] [--to ADDR:PORT]\n\
                     \x20      sockload udp-sink ADDR:PORT [--secs S]\n\
                     \x20      sockload tcp-rr SECS [--len N] [--to ADDR:PORT]\n\
                     \x20      sockload tcp-serve ADDR:PORT [--secs S] [--len N]";

struct Opts {
    secs: f64,
    len: Option<usize>,
    to: Option<SocketAddr>,
}

fn parse_opts(mut it: impl Iterator<Item = String>) -> Result<Opts, String> {
    let mut o = Opts {
        secs: 10.0,
        len: None,
        to: None,
    };
    while let Some(flag) = it.next() {
        let v = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--secs" => o.secs = num(&flag, &v)?,
            "--len" => o.len = Some(num::<usize>(&flag, &v)?.max(1)),
            "--to" => o.to = Some(addr(&v)?),
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    o.secs = positive("--secs", o.secs)?;
    Ok(o)
}

/// A finite number above 0 (a Duration from anything else panics).
fn positive(name: &str, v: f64) -> Result<f64, String> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{name} must be a number above 0, not {v}"))
    }
}

fn num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{name}: '{v}' is not a number"))
}

fn addr(v: &str) -> Result<SocketAddr, String> {
    v.parse()
        .map_err(|_| format!("'{v}' is not an ADDR:PORT (e.g. 10.213.0.2:5300)"))
}

/// Paced sends: before each send, if the sender is ahead of RATE by more
/// than a millisecond it sleeps; behind, it sends without pausing, so the
/// achieved rate says whether the target was reachable.
fn udp_send(rate: f64, o: &Opts) -> io::Result<String> {
    let len = o.len.unwrap_or(64);
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let (to, sink) = match o.to {
        Some(to) => (to, None),
        None => {
            let rx = UdpSocket::bind("127.0.0.1:0")?;
            rx.set_read_timeout(Some(Duration::from_millis(100)))?;
            let to = rx.local_addr()?;
            let (stop, received) = (stop.clone(), received.clone());
            let h = thread::spawn(move || sink_loop(&rx, &stop, &received));
            (to, Some(h))
        }
    };
    let tx = UdpSocket::bind(if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" })?;
    tx.connect(to)?;
    let buf = vec![0x5au8; len];
    let (mut sent, mut errors) = (0u64, 0u64);
    let t0 = Instant::now();
    let end = Duration::from_secs_f64(o.secs);
    loop {
        let el = t0.elapsed();
        if el >= end {
            break;
        }
        if rate > 0.0 {
            let due = rate * el.as_secs_f64();
            if sent as f64 > due + rate / 1000.0 {
                thread::sleep(Duration::from_secs_f64((sent as f64 - due) / rate));
                continue;
            }
        }
        // A burst of 16 between clock reads keeps the clock out of the cost.
        for _ in 0..16 {
            match tx.send(&buf) {
                Ok(_) => sent += 1,
                // ENOBUFS, or ECONNREFUSED while the reader is not up yet.
                Err(_) => errors += 1,
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    if let Some(h) = sink {
        let _ = h.join();
    }
    let rcv = received.load(Ordering::Relaxed);
    Ok(format!(
        "{{\"mode\":\"udp-send\",\"len\":{len},\"target_per_s\":{rate},\"secs\":{secs:.3},\"sent_per_s\":{:.0},\"send_errors\":{errors},\"received_per_s\":{:.0},\"calls_per_s\":{:.0}}}",
        sent as f64 / secs,
        rcv as f64 / secs,
        (sent + rcv) as f64 / secs
    ))
}

fn sink_loop(rx: &UdpSocket, stop: &AtomicBool, received: &AtomicU64) {
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        if rx.recv(&mut buf).is_ok() {
            received.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn udp_sink(at: SocketAddr, o: &Opts) -> io::Result<String> {
    let rx = UdpSocket::bind(at)?;
    rx.set_read_timeout(Some(Duration::from_millis(100)))?;
    let stop = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let timer = {
        let stop = stop.clone();
        let secs = o.secs;
        thread::spawn(move || {
            thread::sleep(Duration::from_secs_f64(secs));
            stop.store(true, Ordering::Relaxed);
        })
    };
    sink_loop(&rx, &stop, &received);
    let _ = timer.join();
    let secs = t0.elapsed().as_secs_f64();
    let n = received.load(Ordering::Relaxed);
    Ok(format!(
        "{{\"mode\":\"udp-sink\",\"secs\":{secs:.3},\"received_per_s\":{:.0}}}",
        n as f64 / secs
    ))
}

/// Answers each LEN-byte request with LEN bytes until the peer closes.
fn serve_conn(mut s: TcpStream, len: usize) -> io::Result<()> {
    s.set_nodelay(true)?;
    let mut buf = vec![0u8; len];
    loop {
        match s.read_exact(&mut buf) {
            Ok(()) => s.write_all(&buf)?,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

fn tcp_serve(at: SocketAddr, o: &Opts) -> io::Result<String> {
    let len = o.len.unwrap_or(32);
    let l = TcpListener::bind(at)?;
    l.set_nonblocking(true)?;
    let t0 = Instant::now();
    let mut conns = 0u64;
    while t0.elapsed().as_secs_f64() < o.secs {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                conns += 1;
                thread::spawn(move || serve_conn(s, len));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(20))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(format!(
        "{{\"mode\":\"tcp-serve\",\"connections\":{conns}}}"
    ))
}

fn tcp_rr(secs: f64, o: &Opts) -> io::Result<String> {
    let len = o.len.unwrap_or(32);
    let (to, server) = match o.to {
        Some(to) => (to, None),
        None => {
            let l = TcpListener::bind("127.0.0.1:0")?;
            let to = l.local_addr()?;
            let h = thread::spawn(move || -> io::Result<()> {
                let (s, _) = l.accept()?;
                serve_conn(s, len)
            });
            (to, Some(h))
        }
    };
    // The server end may be starting in another namespace: retry a while.
    let mut tries = 0;
    let mut s = loop {
        match TcpStream::connect(to) {
            Ok(s) => break s,
            Err(_) if tries < 50 => {
                tries += 1;
                thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(e),
        }
    };
    s.set_nodelay(true)?;
    let mut buf = vec![0x5au8; len];
    let mut n = 0u64;
    let t0 = Instant::now();
    let end = Duration::from_secs_f64(secs);
    while t0.elapsed() < end {
        for _ in 0..64 {
            s.write_all(&buf)?;
            s.read_exact(&mut buf)?;
        }
        n += 64;
    }
    let el = t0.elapsed().as_secs_f64();
    drop(s);
    if let Some(h) = server {
        let _ = h.join();
    }
    // Each transaction is one send and one receive at each end (a short
    // read would add calls; with one small message in flight there are
    // none worth counting).
    let ends = 2.0;
    Ok(format!(
        "{{\"mode\":\"tcp-rr\",\"len\":{len},\"secs\":{el:.3},\"transactions_per_s\":{:.0},\"calls_per_s\":{:.0}}}",
        n as f64 / el,
        n as f64 * 2.0 * ends / el
    ))
}

fn run() -> Result<String, String> {
    let mut it = std::env::args().skip(1);
    let mode = it.next().ok_or(USAGE)?;
    let first = it.next().ok_or(USAGE)?;
    let o = parse_opts(it)?;
    let r = match mode.as_str() {
        "udp-send" => {
            let rate = num::<f64>("RATE", &first)?;
            if !rate.is_finite() || rate < 0.0 {
                return Err(format!("RATE must be 0 (flat out) or more, not {first}"));
            }
            udp_send(rate, &o)
        }
        "udp-sink" => udp_sink(addr(&first)?, &o),
        "tcp-rr" => tcp_rr(positive("SECS", num("SECS", &first)?)?, &o),
        "tcp-serve" => tcp_serve(addr(&first)?, &o),
        _ => return Err(USAGE.into()),
    };
    r.map_err(|e| format!("sockload {mode}: {e}"))
}

fn main() -> ExitCode {
    match run() {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}
