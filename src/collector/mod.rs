//! Collectors: /proc and /sys readers and the BPF collector, producing raw samples.
