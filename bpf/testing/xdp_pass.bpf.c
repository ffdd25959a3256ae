// SPDX-License-Identifier: GPL-2.0
/*
 * A do-nothing XDP program, used only by tests/xdp_mode.rs: attaching it in
 * generic, native and no mode to a veth lets the test check that nettop
 * reports the attachment mode and program id the kernel reports.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
