//! TLB shootdowns for the calibration: one page of this process's address
//! space whose protection the sender lowers and restores.
//!
//! Lowering a present page's protection must flush it from every CPU that
//! may cache it: the kernel sends a `call_function` IPI to each CPU running
//! this address space, whose handler (`flush_tlb_func`) flushes and traces
//! `tlb:tlb_flush` with `TLB_REMOTE_SHOOTDOWN`. The spinner, a thread of the
//! same process, is the only one running elsewhere, so each lowering is one
//! shootdown on its CPU, followed by the TLB refills the spinner then pays,
//! as a task whose sibling thread keeps changing mappings does. Restoring
//! the protection shoots down once more on the development VM's 6.18 kernel
//! (`tlb:tlb_flush` traced two shootdowns per round), so a round is one or
//! two shootdowns; the table is per gap, which holds one either way.

use std::io;

use anyhow::{Result, anyhow};

const PAGE: usize = 4096;

/// The page whose protection is toggled; unmapped on drop.
pub struct Shooter {
    page: *mut libc::c_void,
}

impl Shooter {
    /// Maps one private page and touches it, so its entry is present (a
    /// page never touched has nothing to flush).
    pub fn new() -> Result<Shooter> {
        // SAFETY: an anonymous private mapping at an address the kernel
        // chooses; no existing memory is affected.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return Err(anyhow!(io::Error::last_os_error()).context("mmap of one page"));
        }
        // SAFETY: `page` is a fresh writable mapping of PAGE bytes.
        unsafe { std::ptr::write_volatile(page.cast::<u8>(), 1) };
        Ok(Shooter { page })
    }

    fn protect(&self, prot: libc::c_int) -> Result<()> {
        // SAFETY: `self.page` is our own mapping of PAGE bytes; nothing in
        // Rust holds a reference into it.
        let rc = unsafe { libc::mprotect(self.page, PAGE, prot) };
        if rc != 0 {
            return Err(anyhow!(io::Error::last_os_error()).context("mprotect"));
        }
        Ok(())
    }

    /// One or two shootdowns on every other CPU running this process: read-only
    /// (flush), then writable again (a flush too on some kernels).
    pub fn shoot(&self) -> Result<()> {
        self.protect(libc::PROT_READ)?;
        self.protect(libc::PROT_READ | libc::PROT_WRITE)
    }
}

impl Drop for Shooter {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, used by nobody
        // after this.
        unsafe { libc::munmap(self.page, PAGE) };
    }
}
