//! The bottom layer: system readers and small utilities every layer above
//! may use, and that use nothing above them (docs/ARCHITECTURE.md).
//!
//! Here are the file-system root ([`sysroot`]) every /proc and /sys read
//! goes through, safe opening of files named by users ([`safefile`]),
//! netlink ([`rtnl`]), network-namespace entry ([`netns`]), acting on a
//! task the user picked ([`control`]: signal, renice, affinity), cgroup paths
//! and mounts ([`cgroup`]), CPU lists ([`cpuset`]), user names
//! ([`users`]), signals, the sampling clock ([`ticker`]), the one duration
//! and size syntax ([`units`]), the sanitiser every untrusted string
//! passes ([`sanitize`]) and, in a container, where the node's own files
//! and name are ([`container`]).

pub mod bytes;
pub mod cgroup;
pub mod clock;
pub mod container;
pub mod control;
pub mod cpuset;
pub mod netns;
pub mod rtnl;
pub mod safefile;
pub mod sanitize;
pub mod signals;
pub mod sysroot;
pub mod ticker;
pub mod units;
pub mod users;
pub mod version;
