//! Host topology: hwloc objects, NICs, queue IRQs, thread placement.
