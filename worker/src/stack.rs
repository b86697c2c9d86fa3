//! Stack pages of a PHP thread that a deep recursion touched, given back after it.
//!
//! PHP threads get large stacks (`spawn::php_stack_size`) so that recursion through C
//! frames reaches memory_limit before the end of the stack. The pages such a recursion
//! touched would stay resident for the life of the thread (hundreds of MiB per thread
//! after one runaway `__toString`). After a request that went deeper than [`KEEP`] below
//! the thread's idle frame, they are returned to the kernel (untouched again, they read
//! as zeros). Finding out costs one `mincore()` of the page at that depth: a `madvise()`
//! over the whole unused stack every time costs ~11 µs on a 512 MiB stack. Even the
//! `mincore()` was ~3% of a worker-mode hello-world request's CPU (perf, the syscall and
//! the kernel's page walk), so requests too short to have gone that deep skip it: to touch
//! a page [`KEEP`] below the idle frame, a request must run thousands of nested C calls
//! (or hundreds with 64 KiB frames), far more than [`SHALLOW_REQUEST`] allows.

use std::cell::Cell;
use std::ffi::c_void;

/// Stack kept resident below the caller's frame: ordinary requests never reach past it.
const KEEP: usize = 8 << 20;

/// Requests that ran shorter than this cannot have reached [`KEEP`] deep (see above).
const SHALLOW_REQUEST: std::time::Duration = std::time::Duration::from_micros(50);

thread_local! {
    /// Lowest usable address of this thread's stack; 0 when unknown.
    static LOW: Cell<usize> = const { Cell::new(0) };
}

/// Records the calling thread's stack bounds. Once, at thread start.
pub(crate) fn remember_bounds() {
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    let mut addr: *mut c_void = std::ptr::null_mut();
    let mut size: usize = 0;
    // SAFETY: pthread_getattr_np initialises `attr` for the calling thread when it returns
    // 0; it is read and destroyed only then.
    unsafe {
        if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
            return;
        }
        let got = libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size);
        libc::pthread_attr_destroy(attr.as_mut_ptr());
        if got != 0 {
            return;
        }
    }
    LOW.with(|low| low.set(addr as usize));
}

/// Gives back the pages more than [`KEEP`] below the caller's frame if the last request
/// touched them; `ran` is how long that request ran. Call between requests, from the
/// thread's shallow main loop.
pub(crate) fn release_deep_pages(ran: std::time::Duration) {
    if ran < SHALLOW_REQUEST {
        return;
    }
    let low = LOW.with(Cell::get);
    if low == 0 {
        return;
    }
    let page = 4096usize;
    let here = &low as *const usize as usize;
    let Some(probe) = here.checked_sub(KEEP).map(|p| p & !(page - 1)) else {
        return;
    };
    if probe <= low {
        return;
    }
    let mut resident = 0u8;
    // SAFETY: `probe` is a page-aligned address inside this thread's stack mapping, and
    // mincore writes one byte for one page.
    if unsafe { libc::mincore(probe as *mut c_void, page, &mut resident) } != 0 || resident & 1 == 0
    {
        return;
    }
    // SAFETY: [low, probe + page) lies in this thread's stack, KEEP bytes or more below
    // every live frame (the caller is the thread's outermost loop); MADV_DONTNEED only
    // drops the pages' contents.
    unsafe { libc::madvise(low as *mut c_void, probe + page - low, libc::MADV_DONTNEED) };
}
