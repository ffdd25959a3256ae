//! The pure model: two raw samples in, one Frame of rates and percentages out.
pub mod cgroups;
pub mod compute;
pub mod cost;
pub mod devconf;
pub mod frame;
pub mod hidden;
pub mod system;
pub mod traffic;
pub use compute::compute;
