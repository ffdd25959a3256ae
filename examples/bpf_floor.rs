//! Loads `bpf/testing/floor.bpf.c` (empty and clock-only programs on the
//! tracepoints of an RPS interruption) for the floor benchmark
//! (`bench/collector.sh floor`). Prints `attached` and holds the programs
//! until its standard input closes.

use std::io::Read;
use std::mem::MaybeUninit;
use std::process::ExitCode;

use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};

#[allow(
    clippy::all,
    clippy::pedantic,
    non_camel_case_types,
    dead_code,
    unused_imports,
    unsafe_op_in_unsafe_fn
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/floor.skel.rs"));
}

fn main() -> ExitCode {
    let mut object = MaybeUninit::uninit();
    let skel = skel::FloorSkelBuilder::default()
        .open(&mut object)
        .and_then(|o| o.load());
    let mut skel = match skel {
        Ok(s) => s,
        Err(e) => {
            eprintln!("bpf_floor: loading the floor programs: {e} (needs root and BTF)");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = skel.attach() {
        eprintln!("bpf_floor: attaching: {e}");
        return ExitCode::from(2);
    }
    println!("attached");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    ExitCode::SUCCESS
}
