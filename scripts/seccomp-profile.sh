#!/usr/bin/env bash
# Writes packaging/k8s/seccomp/nettop.json: the container runtime's default
# seccomp profile (containers-common's, /usr/share/containers/seccomp.json,
# the moby-derived default podman and CRI-O use) with bpf(2) and
# perf_event_open(2) allowed for every process instead of only for
# CAP_SYS_ADMIN holders. Nothing else changes: the kernel still wants
# CAP_BPF and CAP_PERFMON for what nettop does with them.
# tests/pure/k8s_manifests.rs checks that the committed file is this output.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-/usr/share/containers/seccomp.json}
out=packaging/k8s/seccomp/nettop.json
jq --indent 2 '
  .syscalls |= (map(.names -= ["bpf", "perf_event_open"]) | map(select(.names | length > 0)))
  | .syscalls += [{
      names: ["bpf", "perf_event_open"],
      action: "SCMP_ACT_ALLOW",
      args: [],
      comment: "nettop: load and attach its tracing programs (the kernel still checks CAP_BPF and CAP_PERFMON)",
      includes: {},
      excludes: {}
    }]' "$base" >"$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
