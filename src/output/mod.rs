//! Batch text and JSON front ends.
pub mod calibration;
pub mod cgroups;
pub mod columns;
pub mod devices;
pub mod format;
pub mod json;
pub mod text;
