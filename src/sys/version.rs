//! `nettop --version`: what this binary is built from and what it would run
//! with here, the first thing a bug report needs. Reads only files (no BPF
//! load, no topology walk), so it answers on any host.

use std::path::Path;

/// Where the kernel publishes its BTF; both attach flavours need it.
const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// The git commit this binary was built from ("unknown" from a tarball).
pub const GIT_HASH: &str = env!("NETTOP_GIT_HASH");

/// libbpf as linked (libbpf-sys vendors it and links it statically).
pub fn libbpf_version() -> String {
    // SAFETY: both are plain getters of compile-time constants in libbpf.
    let (major, minor) = unsafe {
        (
            libbpf_sys::libbpf_major_version(),
            libbpf_sys::libbpf_minor_version(),
        )
    };
    format!("{major}.{minor}")
}

/// The API version of the hwloc library loaded at run time
/// (`hwloc_get_api_version`; hwloc 2.9 still reports API 2.8.0).
pub fn hwloc_version() -> String {
    let v = hwlocality::hwloc_api_version();
    format!("{}.{}.{}", v >> 16, (v >> 8) & 0xff, v & 0xff)
}

/// How the collector would attach here. It tries BTF-typed tracepoints
/// (`tp_btf`) first and falls back to plain raw tracepoints (`raw_tp`) when
/// they fail to load; both need kernel BTF, so its presence decides
/// whether BPF can run at all. Only a real load tells tp_btf from raw_tp,
/// which --version does not do: the batch/TUI health line names the mode
/// in use.
pub fn attach_mode(btf: &Path) -> &'static str {
    if btf.exists() {
        "tp_btf (kernel BTF present; raw_tp if tp_btf does not load)"
    } else {
        "none: no kernel BTF (/sys/kernel/btf/vmlinux), --no-bpf only"
    }
}

/// The text `--version` prints after the name.
pub fn long_version() -> String {
    format!(
        "{}\ncommit:      {GIT_HASH}\nlibbpf:      {} (static, vendored by libbpf-sys)\n\
         hwloc:       API {} (shared library in use)\nBPF attach:  {}",
        env!("CARGO_PKG_VERSION"),
        libbpf_version(),
        hwloc_version(),
        attach_mode(Path::new(VMLINUX_BTF)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_real_numbers() {
        let v = libbpf_version();
        assert!(v.starts_with("1."), "{v}");
        let h = hwloc_version();
        assert!(h.starts_with("2."), "{h}");
        assert!(!GIT_HASH.is_empty());
        assert!(attach_mode(Path::new("/nonexistent")).starts_with("none"));
    }
}
