//! `bpf/testing/xdp_pass.bpf.c`, an XDP program that passes every frame (built by
//! build.rs), for the tests that attach XDP to real veths.

use std::mem::MaybeUninit;

use libbpf_rs::OpenObject;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};

#[allow(
    clippy::all,
    clippy::pedantic,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    unused_imports,
    unsafe_op_in_unsafe_fn
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/xdp_pass.skel.rs"));
}

pub use skel::XdpPassSkel;

/// Opens and loads the program into the kernel (not attached anywhere);
/// `Err` says why this host cannot, for the caller's skip.
pub fn load(obj: &mut MaybeUninit<OpenObject>) -> Result<XdpPassSkel<'_>, String> {
    let open = skel::XdpPassSkelBuilder::default()
        .open(obj)
        .map_err(|e| format!("opening xdp_pass BPF object: {e}"))?;
    open.load().map_err(|e| format!("loading xdp_pass: {e}"))
}
