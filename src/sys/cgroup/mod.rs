//! cgroups as workload identity: which pod, container or service a task
//! belongs to. [`path`] is pure (a path in, names out); the collector
//! resolves the task sampler's cgroup ids to paths
//! (`collector::cgroups`), and the model rolls tasks up per cgroup
//! (`model::cgroups`). [`pods`] names a Kubernetes pod and container from
//! the kubelet's log directories, where the path only has their ids.

pub mod mounts;
pub mod path;
pub mod pods;

pub use mounts::{Mounts, walk_v2};
pub use path::{Identity, ProcCgroup, Qos};
pub use pods::PodName;
