//! The tests that need root: the BPF collector, network namespaces, real
//! traffic, mounts, cgroups. Each says what it needs (`case!`); the harness
//! runs them one at a time (they load CPUs and measure) and reports the
//! ones whose needs are missing as not run (`common::tier`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod bpf_live;
mod bpf_timing;
mod calibrate_live;
mod cgroup_live;
mod hostile_apply;
mod many_threads;
mod mem_live;
mod metrics_live;
mod netdev_live;
mod netns_hidden;
mod netns_live;
mod own_cost_live;
mod pinning_live;
mod plan_live;
mod record_kill;
mod service_disk;
mod service_live;
mod task_sampler;
mod task_walk;
mod thread_list;
mod traffic_live;
mod xdp_mode;

// Files of the pure tier with cases of this one.
#[allow(dead_code, unused_imports)]
#[path = "../pure/batch_render/mod.rs"]
mod batch_render;
#[allow(dead_code, unused_imports)]
#[path = "../pure/hostile_cli.rs"]
mod hostile_cli;
#[allow(dead_code, unused_imports)]
#[path = "../pure/hostile_files.rs"]
mod hostile_files;
#[allow(dead_code, unused_imports)]
#[path = "../pure/hostile_serve.rs"]
mod hostile_serve;

fn main() -> std::process::ExitCode {
    // Re-executed as one end of a traffic test's flows (`common::udp`).
    if let Some(code) = common::udp::role_from_env() {
        return code;
    }
    common::tier::main(common::tier::Threads::One)
}
