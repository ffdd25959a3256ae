# shellcheck shell=bash
# Sourced by install.sh and test.sh: everything a fresh Debian 12 (root)
# needs to build, run and test nettop. Idempotent.

export DEBIAN_FRONTEND=noninteractive

# Build: clang (BPF objects), libelf/zlib (libbpf), hwloc (+ libudev, which
# hwloc's static link wants). Run/test: bpftool, iproute2 (ip netns),
# iperf3 (accuracy test traffic), util-linux (taskset), procps (top),
# tmux (TUI tests), hwloc, prometheus (promtool for --serve output), atop.
# Packaging test: systemd (systemd-analyze verify), man-db (man -l),
# binutils (readelf), dpkg-dev (cargo-deb's dpkg-shlibdeps) and
# init-system-helpers (deb-systemd-helper, which the package's maintainer
# scripts run). Container test (tests/system/k8s_image.rs): buildah builds the
# image from scratch, podman runs it with runc (crun refuses this VM's
# hybrid cgroup layout), and golang-github-containers-common brings the
# runtime's default seccomp profile nettop's is derived from.
APT_PACKAGES=(
    build-essential ca-certificates curl git
    clang llvm libelf-dev zlib1g-dev pkg-config libhwloc-dev libudev-dev
    bpftool iproute2 iperf3 util-linux procps tmux hwloc prometheus atop jq
    systemd man-db binutils dpkg-dev init-system-helpers
    podman buildah runc golang-github-containers-common
)

install_system_packages() {
    local missing=() p
    for p in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        echo ">>> apt-get install ${missing[*]}"
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}

# Debian 12's rustc (1.63) predates edition 2024: use rustup's stable.
install_rust() {
    if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
    if ! command -v rustup >/dev/null; then
        echo ">>> installing Rust with rustup"
        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
            sh -s -- -y --profile minimal --component rustfmt,clippy
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
    rustup component add rustfmt clippy >/dev/null 2>&1 || true
}

# cargo-deb builds the .deb (scripts/package.sh, tests/pure/packaging.rs). A
# fresh machine compiles it once: about 6.5 minutes on the 2 shared cores
# of the development VM.
install_cargo_deb() {
    command -v cargo-deb >/dev/null && return 0
    echo ">>> cargo install cargo-deb --locked"
    cargo install cargo-deb --locked
}

# The Kubernetes packaging's tests (tests/pure/k8s_manifests.rs, k8s_image.rs)
# lint and render the Helm chart with helm, built from the Go module proxy
# (Debian has no helm), and decode the renderings with
# packaging/k8s/validate, whose modules are fetched here once. Go itself
# is the machine's (/usr/local/go). A fresh machine takes about 8 minutes
# for helm and 2.5 for the validator on the 2 shared cores of the
# development VM.
HELM_VERSION=v3.22.0
install_k8s_tools() {
    local go=go
    command -v go >/dev/null || go=/usr/local/go/bin/go
    if ! command -v "$go" >/dev/null && [[ ! -x $go ]]; then
        echo ">>> no Go toolchain: the Kubernetes packaging tests will fail" >&2
        return 0
    fi
    if ! command -v helm >/dev/null && [[ ! -x $HOME/go/bin/helm ]]; then
        echo ">>> go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
        "$go" install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
    fi
    export PATH="$PATH:$HOME/go/bin"
    (cd packaging/k8s/validate && "$go" mod download && "$go" build -o /dev/null .)
}

# BPF tracepoint attach works without tracefs (tp_btf/raw_tp), but bpftool
# and the tests read event formats from it.
mount_tracefs() {
    if [[ -d /sys/kernel/tracing ]] && ! mountpoint -q /sys/kernel/tracing; then
        mount -t tracefs nodev /sys/kernel/tracing || echo "warning: cannot mount tracefs" >&2
    fi
}
