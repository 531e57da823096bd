//! The panic boundary every exported function runs inside, the engine handle it validates,
//! and the checks every pointer from C gets before it becomes a Rust reference or slice.

use crate::status::*;
use mmo_core::{BatchError, Engine};
use std::mem::{align_of, size_of};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};

/// An engine as the C side holds it: opaque.
pub struct MmoEngine {
    /// The core. Shared by every calling thread.
    pub(crate) engine: Engine,
    /// Set when a state-changing call panicked. Written by the boundary, read by every call.
    pub(crate) poisoned: AtomicBool,
    /// Whether [`mmo_debug_inject_panic`] may be used. Fixed at creation.
    pub(crate) fault_injection: bool,
}

/// Whether a call changes engine state (a panic in it poisons the engine).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    Reads,
    Mutates,
}

/// The one panic boundary for calls that need no engine.
pub(crate) fn boundary(body: impl FnOnce() -> MmoStatus) -> MmoStatus {
    boundary_or(MMO_ERR_PANIC, body)
}

/// The panic boundary for the few calls that return a value instead of a status: a panic
/// returns `fallback`.
pub(crate) fn boundary_or<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// The one panic boundary for calls on an engine: validates the handle, refuses a poisoned
/// engine, catches any panic and poisons the engine if the call was changing state.
///
/// # Safety
/// `engine` must be NULL or a pointer returned by [`mmo_engine_new`] and not yet freed.
pub(crate) unsafe fn engine_boundary(engine: *const MmoEngine, access: Access, body: impl FnOnce(&MmoEngine) -> MmoStatus) -> MmoStatus {
    if engine.is_null() {
        return MMO_ERR_NULL_POINTER;
    }
    if !(engine as usize).is_multiple_of(align_of::<MmoEngine>()) {
        return MMO_ERR_MISALIGNED_POINTER;
    }
    // SAFETY: non-null and aligned; the caller promises it came from mmo_engine_new.
    let handle = unsafe { &*engine };
    if handle.poisoned.load(Ordering::Acquire) {
        return MMO_ERR_POISONED;
    }
    match catch_unwind(AssertUnwindSafe(|| body(handle))) {
        Ok(status) => status,
        Err(_) => {
            if access == Access::Mutates {
                handle.poisoned.store(true, Ordering::Release);
            }
            MMO_ERR_PANIC
        }
    }
}

/// The checks every pointer from C gets: non-null and aligned for `T`, and `len` elements of
/// `T` within `isize::MAX` bytes (as `slice::from_raw_parts` requires).
pub(crate) fn check_ptr<T>(ptr: *const T, len: usize) -> Result<(), MmoStatus> {
    if ptr.is_null() {
        Err(MMO_ERR_NULL_POINTER)
    } else if !(ptr as usize).is_multiple_of(align_of::<T>()) {
        Err(MMO_ERR_MISALIGNED_POINTER)
    } else if len > isize::MAX as usize / size_of::<T>().max(1) {
        Err(MMO_ERR_INVALID_ARGUMENT)
    } else {
        Ok(())
    }
}

/// The checks [`input`] and [`output`] make, without borrowing: a span of length 0 passes
/// whatever the pointer.
pub(crate) fn span_ok<T>(ptr: *const T, len: usize) -> Result<(), MmoStatus> {
    if len == 0 { Ok(()) } else { check_ptr(ptr, len) }
}

/// Borrows a `(pointer, length)` input slice for the call. Length 0 is empty whatever the
/// pointer.
///
/// # Safety
/// If `len > 0` and `ptr` is non-null and aligned, it must point to `len` initialised `T`s
/// that stay valid and unmodified for the call.
pub(crate) unsafe fn input<'a, T>(ptr: *const T, len: usize) -> Result<&'a [T], MmoStatus> {
    if len == 0 {
        return Ok(&[]);
    }
    check_ptr(ptr, len)?;
    // SAFETY: checked non-null, aligned and in size range; validity is the caller's promise.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Borrows a `(pointer, capacity)` output slice for the call.
///
/// # Safety
/// As [`input`], for `capacity` writable `T`s not aliased by any other argument.
pub(crate) unsafe fn output<'a, T>(ptr: *mut T, capacity: usize) -> Result<&'a mut [T], MmoStatus> {
    if capacity == 0 {
        return Ok(&mut []);
    }
    check_ptr(ptr, capacity)?;
    // SAFETY: as for `input`; exclusivity is the caller's promise.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, capacity) })
}

/// Writes `text` into a caller's message buffer as a NUL-terminated string, cut to fit (an
/// empty buffer gets nothing).
pub(crate) fn write_message(buf: &mut [u8], text: &str) {
    if let Some(last) = buf.len().checked_sub(1) {
        let n = text.len().min(last);
        buf[..n].copy_from_slice(&text.as_bytes()[..n]);
        buf[n] = 0;
    }
}

/// Checks a single out-pointer.
pub(crate) fn out_ptr<T>(ptr: *mut T) -> Result<*mut T, MmoStatus> {
    check_ptr(ptr, 1).map(|()| ptr)
}

/// Checks a single in-pointer and borrows its value for the call.
///
/// # Safety
/// If non-null and aligned, `ptr` must point to an initialised `T`.
pub(crate) unsafe fn in_ref<'a, T>(ptr: *const T) -> Result<&'a T, MmoStatus> {
    check_ptr(ptr, 1)?;
    // SAFETY: checked non-null and aligned; validity is the caller's promise.
    Ok(unsafe { &*ptr })
}

/// The shape every batch call shares: borrow the input slice and the output buffer, run the
/// batch, and write the count of outputs only on success.
///
/// # Safety
/// As [`input`] and [`output`] for the two slices (which must not overlap); `out_written`
/// NULL or writable.
pub(crate) unsafe fn batch<I, O>(
    input_ptr: *const I,
    input_len: usize,
    output_ptr: *mut O,
    output_capacity: usize,
    out_written: *mut usize,
    apply: impl FnOnce(&[I], &mut [O]) -> Result<usize, BatchError>,
) -> MmoStatus {
    // Every pointer is checked, and the spans tested for overlap, before any slice is
    // borrowed: a `&mut` over bytes a `&` already borrows is undefined behaviour even if
    // nothing is written through it.
    if let Err(status) = span_ok(input_ptr, input_len).and(span_ok(output_ptr, output_capacity)) {
        return status;
    }
    let written = match out_ptr(out_written) {
        Ok(p) => p,
        Err(status) => return status,
    };
    if spans_overlap(input_ptr, input_len, output_ptr, output_capacity)
        || spans_overlap(written, 1, input_ptr, input_len)
        || spans_overlap(written, 1, output_ptr, output_capacity)
    {
        return MMO_ERR_INVALID_ARGUMENT;
    }
    // SAFETY: checked above; validity and exclusivity are the caller's promise.
    let (inputs, outputs) = match unsafe { input(input_ptr, input_len).and_then(|i| Ok((i, output(output_ptr, output_capacity)?))) } {
        Ok(pair) => pair,
        Err(status) => return status,
    };
    match apply(inputs, outputs) {
        Ok(n) => {
            // SAFETY: checked by out_ptr.
            unsafe { written.write(n) };
            MMO_OK
        }
        Err(BatchError::OutputTooSmall { .. }) => MMO_ERR_BUFFER_TOO_SMALL,
    }
}

/// Whether `a_len` `A`s at `a` and `b_len` `B`s at `b` would share any byte (an empty span
/// shares none, wherever it points). Tested on the raw pointers, before either is borrowed.
pub(crate) fn spans_overlap<A, B>(a: *const A, a_len: usize, b: *const B, b_len: usize) -> bool {
    let end = |start: usize, len: usize, size: usize| start.saturating_add(len.saturating_mul(size));
    let (a_start, b_start) = (a as usize, b as usize);
    let (a_end, b_end) = (end(a_start, a_len, size_of::<A>()), end(b_start, b_len, size_of::<B>()));
    a_start < a_end && b_start < b_end && a_start < b_end && b_start < a_end
}

/// Evaluates a `Result<T, MmoStatus>`, returning the status from the enclosing closure on error.
macro_rules! check {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(status) => return status,
        }
    };
}
