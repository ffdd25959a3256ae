//! Batch text and JSON front ends.
pub mod batch;
pub mod calibration;
pub mod cgroups;
pub mod json;
pub mod text;
