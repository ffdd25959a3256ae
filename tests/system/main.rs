//! The tests that need tools of the host beyond the build: the .deb with
//! dpkg, Prometheus and promtool, groff, podman and buildah. Each says what
//! it needs (`case!`); see `common::tier`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod k8s_image;

// Files of the pure tier with cases of this one.
#[allow(dead_code, unused_imports)]
#[path = "../pure/export_openmetrics.rs"]
mod export_openmetrics;
#[allow(dead_code, unused_imports)]
#[path = "../pure/fleet.rs"]
mod fleet;
#[allow(dead_code, unused_imports)]
#[path = "../pure/k8s_manifests.rs"]
mod k8s_manifests;
#[allow(dead_code, unused_imports)]
#[path = "../pure/man_page.rs"]
mod man_page;
#[allow(dead_code, unused_imports)]
#[path = "../pure/packaging.rs"]
mod packaging;

fn main() -> std::process::ExitCode {
    common::tier::main(common::tier::Threads::Default)
}
