//! Holds N sleeping threads in one process, for the thread-count benchmark
//! (bench/threads.sh): `threads N`. Prints `ready PID` once every thread
//! exists and exits when its standard input closes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(n) = std::env::args()
        .nth(1)
        .and_then(|s| s.parse::<usize>().ok())
    else {
        eprintln!("usage: threads N");
        return ExitCode::from(2);
    };
    let mut handles = Vec::with_capacity(n);
    for i in 0..n {
        // Small stacks: the point is the count, not the memory.
        match std::thread::Builder::new().stack_size(64 * 1024).spawn(|| {
            loop {
                std::thread::park();
            }
        }) {
            Ok(h) => handles.push(h),
            Err(e) => {
                eprintln!("thread {i} of {n}: {e} (pid_max, threads-max or a pids limit?)");
                return ExitCode::from(1);
            }
        }
    }
    println!("ready {}", std::process::id());
    let _ = std::io::stdout().flush();
    let mut sink = [0u8; 64];
    while matches!(std::io::stdin().read(&mut sink), Ok(k) if k > 0) {}
    ExitCode::SUCCESS
}
