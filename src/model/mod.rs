//! The pure model: two raw samples in, one Frame of rates and percentages out.
pub mod frame;
pub mod raw;
mod compute;
pub use compute::compute;
