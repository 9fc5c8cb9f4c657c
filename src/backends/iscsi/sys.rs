//! The unsafe/FFI boundary of the iSCSI backend: hand-written declarations of
//! the few libiscsi functions it uses and a [`Session`] around one
//! `iscsi_context`, safe except for the two calls that keep a buffer
//! (`read16`, `write16`: `unsafe fn`s, see docs/unsafe.md). Every FFI call of
//! the iSCSI backend is here.
//!
//! Ownership rules the wrapper keeps:
//!
//! * Every asynchronous SCSI task carries, as its `private_data`, a pointer to
//!   one [`CbSlot`] in a heap array that lives as long as the session. The
//!   callback copies the status and sense into the session's `done` list (also
//!   heap-allocated, reached only through a raw pointer) and frees the task.
//! * Callbacks only run inside `iscsi_service` and `iscsi_destroy_context`
//!   (libiscsi has no threads), and no Rust reference to the slots or the done
//!   list is alive across those calls.
//! * `Drop` destroys the context first — libiscsi then invokes the callback of
//!   every task still in flight with `SCSI_STATUS_CANCELLED` — and only then
//!   frees the slots and the done list, so no callback ever touches freed memory.
//! * A slot (tag) is reused only after its completion has been drained, so the
//!   iovec a read task points at is never rewritten while the task is live.

use crate::io::IoBuf;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::io;
use std::os::fd::RawFd;
use std::ptr::{self, NonNull};

/// The identity of a LUN from its logical-unit designators (type, code set,
/// bytes): NAA (3), then EUI-64 (2), the SCSI name string (8), the T10
/// vendor id (1); binary designators in hex, text ones as text.
fn best_designator(found: &[(c_int, c_int, Vec<u8>)]) -> Option<String> {
    let rank = |t: c_int| [3, 2, 8, 1].iter().position(|&x| x == t);
    let (t, code_set, bytes) = found
        .iter()
        .filter(|(t, _, _)| rank(*t).is_some())
        .min_by_key(|(t, _, _)| rank(*t))?;
    let name = match t {
        3 => "naa",
        2 => "eui-64",
        8 => "name",
        _ => "t10",
    };
    let value = if *code_set == CODE_SET_BINARY {
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    } else {
        String::from_utf8_lossy(bytes)
            .trim_end_matches(['\0', ' '])
            .to_string()
    };
    Some(format!("{name} {value}"))
}

/// `SCSI_STATUS_GOOD`.
pub const STATUS_GOOD: i32 = 0;
/// `SCSI_STATUS_CHECK_CONDITION`.
pub const STATUS_CHECK_CONDITION: i32 = 2;
/// `SCSI_STATUS_CANCELLED` (libiscsi's own: the task never finished).
pub const STATUS_CANCELLED: i32 = 0x0f00_0000;
/// `SCSI_STATUS_ERROR` (libiscsi's own: transport failure).
pub const STATUS_ERROR: i32 = 0x0f00_0001;
/// `SCSI_STATUS_TIMEOUT` (libiscsi's own).
pub const STATUS_TIMEOUT: i32 = 0x0f00_0002;

const ISCSI_SESSION_NORMAL: c_int = 2;
const ISCSI_HEADER_DIGEST_NONE: c_int = 0;
/// MODE SENSE page code "return all pages".
const MODE_PAGE_ALL: c_int = 0x3f;
/// DPOFUA bit of the mode parameter header's device-specific parameter (SBC).
const DPOFUA: u8 = 0x10;

#[repr(C)]
struct IscsiContext {
    _opaque: [u8; 0],
}

#[repr(C)]
struct ScsiTask {
    _opaque: [u8; 0],
}

/// `struct scsi_sense`: only `key` and `ascq` are read; the tail is larger than
/// the C bit-field part so `scsi_task_get_status` never writes past it.
#[repr(C)]
struct ScsiSense {
    error_type: u8,
    key: c_int,
    ascq: c_int,
    _tail: [u8; 16],
}

impl ScsiSense {
    fn zeroed() -> ScsiSense {
        ScsiSense {
            error_type: 0,
            key: 0,
            ascq: 0,
            _tail: [0; 16],
        }
    }
}

/// `struct scsi_iovec` (same layout as POSIX `struct iovec`).
#[repr(C)]
struct ScsiIovec {
    iov_base: *mut c_void,
    iov_len: usize,
}

/// `struct scsi_readcapacity16`.
#[repr(C)]
struct ScsiReadCapacity16 {
    returned_lba: u64,
    block_length: u32,
    p_type: u8,
    prot_en: u8,
    p_i_exp: u8,
    lbppbe: u8,
    lbpme: u8,
    lbprz: u8,
    lalba: u16,
}

/// `struct scsi_mode_sense` (header fields only are read).
#[repr(C)]
struct ScsiModeSense {
    mode_data_length: u16,
    medium_type: u8,
    device_specific_parameter: u8,
    longlba: u8,
    block_descriptor_length: u8,
    pages: *mut c_void,
}

/// `struct scsi_inquiry_device_designator` (SPC-4 §7.8.6.1).
#[repr(C)]
struct ScsiDesignator {
    next: *mut ScsiDesignator,
    protocol_identifier: c_int,
    code_set: c_int,
    piv: c_int,
    association: c_int,
    designator_type: c_int,
    designator_length: c_int,
    designator: *mut c_char,
}

/// `struct scsi_inquiry_device_identification` (VPD page 0x83).
#[repr(C)]
struct ScsiDeviceIdentification {
    qualifier: c_int,
    device_type: c_int,
    pagecode: c_int,
    designators: *mut ScsiDesignator,
}

/// VPD page "Device Identification".
const VPD_DEVICE_IDENTIFICATION: c_int = 0x83;
/// Designator association: the logical unit itself (not a port or target).
const ASSOCIATION_LOGICAL_UNIT: c_int = 0;
/// Designator code set: binary (else ASCII or UTF-8 text).
const CODE_SET_BINARY: c_int = 1;

type CommandCb = extern "C" fn(*mut IscsiContext, c_int, *mut c_void, *mut c_void);

#[link(name = "iscsi")]
unsafe extern "C" {
    fn iscsi_create_context(initiator_name: *const c_char) -> *mut IscsiContext;
    fn iscsi_destroy_context(iscsi: *mut IscsiContext) -> c_int;
    fn iscsi_set_targetname(iscsi: *mut IscsiContext, targetname: *const c_char) -> c_int;
    fn iscsi_set_session_type(iscsi: *mut IscsiContext, session_type: c_int) -> c_int;
    fn iscsi_set_header_digest(iscsi: *mut IscsiContext, header_digest: c_int) -> c_int;
    fn iscsi_set_isid_random(iscsi: *mut IscsiContext, rnd: u32, qualifier: u32) -> c_int;
    fn iscsi_set_noautoreconnect(iscsi: *mut IscsiContext, state: c_int);
    fn iscsi_full_connect_sync(
        iscsi: *mut IscsiContext,
        portal: *const c_char,
        lun: c_int,
    ) -> c_int;
    fn iscsi_get_error(iscsi: *mut IscsiContext) -> *const c_char;
    fn iscsi_get_fd(iscsi: *mut IscsiContext) -> c_int;
    fn iscsi_which_events(iscsi: *mut IscsiContext) -> c_int;
    fn iscsi_service(iscsi: *mut IscsiContext, revents: c_int) -> c_int;
    fn iscsi_out_queue_length(iscsi: *mut IscsiContext) -> c_int;

    fn iscsi_readcapacity16_sync(iscsi: *mut IscsiContext, lun: c_int) -> *mut ScsiTask;
    fn iscsi_inquiry_sync(
        iscsi: *mut IscsiContext,
        lun: c_int,
        evpd: c_int,
        page_code: c_int,
        maxsize: c_int,
    ) -> *mut ScsiTask;
    fn iscsi_modesense10_sync(
        iscsi: *mut IscsiContext,
        lun: c_int,
        llbaa: c_int,
        dbd: c_int,
        pc: c_int,
        page_code: c_int,
        sub_page_code: c_int,
        alloc_len: u8,
    ) -> *mut ScsiTask;

    fn iscsi_read16_iov_task(
        iscsi: *mut IscsiContext,
        lun: c_int,
        lba: u64,
        datalen: u32,
        blocksize: c_int,
        rdprotect: c_int,
        dpo: c_int,
        fua: c_int,
        fua_nv: c_int,
        group_number: c_int,
        cb: CommandCb,
        private_data: *mut c_void,
        iov: *mut ScsiIovec,
        niov: c_int,
    ) -> *mut ScsiTask;
    fn iscsi_write16_task(
        iscsi: *mut IscsiContext,
        lun: c_int,
        lba: u64,
        data: *mut u8,
        datalen: u32,
        blocksize: c_int,
        wrprotect: c_int,
        dpo: c_int,
        fua: c_int,
        fua_nv: c_int,
        group_number: c_int,
        cb: CommandCb,
        private_data: *mut c_void,
    ) -> *mut ScsiTask;
    fn iscsi_synchronizecache16_task(
        iscsi: *mut IscsiContext,
        lun: c_int,
        lba: u64,
        num_blocks: u32,
        syncnv: c_int,
        immed: c_int,
        cb: CommandCb,
        private_data: *mut c_void,
    ) -> *mut ScsiTask;

    fn scsi_task_get_status(task: *mut ScsiTask, sense: *mut ScsiSense) -> c_int;
    fn scsi_datain_unmarshall(task: *mut ScsiTask) -> *mut c_void;
    fn scsi_free_scsi_task(task: *mut ScsiTask);
    fn scsi_sense_key_str(key: c_int) -> *const c_char;
    fn scsi_sense_ascq_str(ascq: c_int) -> *const c_char;
}

/// One finished asynchronous task.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    /// The tag the submit call returned.
    pub tag: u32,
    /// SCSI status, or one of libiscsi's `STATUS_CANCELLED/ERROR/TIMEOUT`.
    pub status: i32,
    /// Sense key (valid with `STATUS_CHECK_CONDITION`).
    pub sense_key: i32,
    /// ASC/ASCQ (valid with `STATUS_CHECK_CONDITION`).
    pub ascq: i32,
}

/// What READ CAPACITY(16) reported.
#[derive(Clone, Copy, Debug)]
pub struct Capacity {
    /// Logical block length in bytes.
    pub block_size: u32,
    /// Number of logical blocks.
    pub blocks: u64,
}

const SLOT_FREE: u8 = 0;
const SLOT_SUBMITTING: u8 = 1;
const SLOT_IN_FLIGHT: u8 = 2;
const SLOT_DONE: u8 = 3;

/// The callback context of one tag. Lives in a heap array owned (through a raw
/// pointer) by its [`Session`].
struct CbSlot {
    done: *mut Vec<Done>,
    tag: u32,
    state: u8,
    task: *mut ScsiTask,
    iov: ScsiIovec,
}

extern "C" fn on_task_done(
    _iscsi: *mut IscsiContext,
    status: c_int,
    _command_data: *mut c_void,
    private_data: *mut c_void,
) {
    let slot = private_data.cast::<CbSlot>();
    let mut sense = ScsiSense::zeroed();
    // SAFETY: private_data is the CbSlot pointer this session passed when it
    // submitted the task; the slot array and the done list outlive the context
    // (Drop destroys the context before freeing them), and no Rust reference to
    // either is alive while libiscsi runs callbacks. A task recorded in the slot
    // was returned by libiscsi, has not been freed, and is freed exactly once here.
    unsafe {
        let s = &mut *slot;
        if !s.task.is_null() {
            scsi_task_get_status(s.task, &mut sense);
            scsi_free_scsi_task(s.task);
            s.task = ptr::null_mut();
        }
        s.state = SLOT_DONE;
        (*s.done).push(Done {
            tag: s.tag,
            status,
            sense_key: sense.key,
            ascq: sense.ascq,
        });
    }
}

/// Names of a sense key (`key`) or an ASC/ASCQ pair that libiscsi 1.19 leaves
/// unnamed but servers send: tgtd reports any failed write to its backing
/// file (a full file system included) as MEDIUM_ERROR/UNRECOVERED_READ_ERROR.
fn unnamed_by_libiscsi(key: bool, code: i32) -> Option<&'static str> {
    Some(match (key, code) {
        (true, 0x3) => "MEDIUM_ERROR",
        (false, 0x0300) => "PERIPHERAL_DEVICE_WRITE_FAULT",
        (false, 0x0c00) => "WRITE_ERROR",
        (false, 0x1100) => "UNRECOVERED_READ_ERROR",
        (false, 0x2707) => "SPACE_ALLOCATION_FAILED_WRITE_PROTECT",
        _ => return None,
    })
}

/// Text of a sense key and ASC/ASCQ, e.g. "ILLEGAL_REQUEST/LBA_OUT_OF_RANGE"
/// or "MEDIUM_ERROR (0x3)/UNRECOVERED_READ_ERROR (0x1100)".
pub fn sense_text(key: i32, ascq: i32) -> String {
    // SAFETY: both functions return pointers to static NUL-terminated strings
    // (or NULL for unknown codes, which is checked).
    let (k, a) = unsafe { (scsi_sense_key_str(key), scsi_sense_ascq_str(ascq)) };
    let s = |p: *const c_char, is_key: bool, code: i32| {
        if p.is_null() {
            match unnamed_by_libiscsi(is_key, code) {
                Some(name) => format!("{name} ({code:#x})"),
                None => format!("{code:#x}"),
            }
        } else {
            // SAFETY: non-NULL, static and NUL-terminated (see above).
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    format!("{}/{}", s(k, true, key), s(a, false, ascq))
}

/// `poll(2)` over `fds`; returns how many have events.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: the pointer and length describe a live, writable slice of pollfd.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// One logged-in iSCSI session to one LUN, with `slots` asynchronous tags.
pub struct Session {
    ctx: NonNull<IscsiContext>,
    lun: c_int,
    slots: *mut CbSlot,
    nslots: usize,
    done: *mut Vec<Done>,
    free: Vec<u32>,
}

impl Session {
    /// Create a context as `initiator`, log in to `target_iqn` at `portal`
    /// ("host:port") and check that `lun` exists. The error is libiscsi's text.
    pub fn connect(
        initiator: &str,
        target_iqn: &str,
        portal: &str,
        lun: u32,
        slots: usize,
        isid: (u32, u16),
    ) -> Result<Session, String> {
        let c = |s: &str| CString::new(s).map_err(|_| format!("{s:?} contains a NUL byte"));
        let (initiator, target_iqn, portal) = (c(initiator)?, c(target_iqn)?, c(portal)?);
        let lun = c_int::try_from(lun).map_err(|_| format!("LUN {lun} is out of range"))?;
        // SAFETY: a valid NUL-terminated string; libiscsi copies it.
        let raw = unsafe { iscsi_create_context(initiator.as_ptr()) };
        let ctx = NonNull::new(raw).ok_or("cannot create an iSCSI context")?;
        let nslots = slots.max(1);
        let done = Box::into_raw(Box::new(Vec::with_capacity(nslots)));
        let slot_vec: Vec<CbSlot> = (0..nslots)
            .map(|i| CbSlot {
                done,
                tag: i as u32,
                state: SLOT_FREE,
                task: ptr::null_mut(),
                iov: ScsiIovec {
                    iov_base: ptr::null_mut(),
                    iov_len: 0,
                },
            })
            .collect();
        let slots_ptr = Box::into_raw(slot_vec.into_boxed_slice()).cast::<CbSlot>();
        // From here on Drop owns the context, the slots and the done list.
        let mut s = Session {
            ctx,
            lun,
            slots: slots_ptr,
            nslots,
            done,
            free: (0..nslots as u32).rev().collect(),
        };
        let p = s.ctx.as_ptr();
        // SAFETY: `p` is a live context; the strings are valid and copied by libiscsi.
        let rc = unsafe {
            iscsi_set_isid_random(p, isid.0 & 0x00ff_ffff, u32::from(isid.1));
            iscsi_set_noautoreconnect(p, 1);
            if iscsi_set_targetname(p, target_iqn.as_ptr()) != 0
                || iscsi_set_session_type(p, ISCSI_SESSION_NORMAL) != 0
                || iscsi_set_header_digest(p, ISCSI_HEADER_DIGEST_NONE) != 0
            {
                -1
            } else {
                iscsi_full_connect_sync(p, portal.as_ptr(), lun)
            }
        };
        if rc != 0 {
            return Err(s.error());
        }
        s.lun = lun;
        Ok(s)
    }

    /// libiscsi's description of the last error on this context.
    pub fn error(&self) -> String {
        self.last_error()
            .unwrap_or_else(|| "unknown libiscsi error".into())
    }

    /// libiscsi's description of the last error on this context, `None`
    /// if it has set none.
    pub fn last_error(&self) -> Option<String> {
        // SAFETY: live context; the result is NULL or a NUL-terminated string
        // owned by the context, copied before any other libiscsi call.
        let p = unsafe { iscsi_get_error(self.ctx.as_ptr()) };
        if p.is_null() {
            return None;
        }
        // SAFETY: see above.
        let s = unsafe { CStr::from_ptr(p) }
            .to_string_lossy()
            .trim()
            .to_string();
        (!s.is_empty()).then_some(s)
    }

    /// READ CAPACITY(16), synchronously.
    pub fn read_capacity16(&mut self) -> Result<Capacity, String> {
        // SAFETY: live, logged-in context; the task returned is ours to free.
        let task = unsafe { iscsi_readcapacity16_sync(self.ctx.as_ptr(), self.lun) };
        if task.is_null() {
            return Err(format!("READ CAPACITY(16) failed: {}", self.error()));
        }
        let mut sense = ScsiSense::zeroed();
        // SAFETY: `task` is a live task; unmarshall returns NULL or a struct
        // allocated with the task, read before the task is freed once below.
        unsafe {
            let status = scsi_task_get_status(task, &mut sense);
            let r = if status != STATUS_GOOD {
                Err(format!(
                    "READ CAPACITY(16) failed: {}",
                    status_text(status, sense.key, sense.ascq)
                ))
            } else {
                let rc = scsi_datain_unmarshall(task).cast::<ScsiReadCapacity16>();
                if rc.is_null() {
                    Err("READ CAPACITY(16) returned no data".to_string())
                } else {
                    Ok(Capacity {
                        block_size: (*rc).block_length,
                        blocks: (*rc).returned_lba.saturating_add(1),
                    })
                }
            };
            scsi_free_scsi_task(task);
            r
        }
    }

    /// The LUN's identity from INQUIRY's Device Identification page (0x83):
    /// its best logical-unit designator, NAA first, then EUI-64, the SCSI
    /// name string and the T10 vendor id, as `naa 6001405...`; `None` when
    /// the page fails or names no logical-unit designator.
    pub fn device_id(&mut self) -> Option<String> {
        // SAFETY: live, logged-in context; the task returned is ours to free.
        let task = unsafe {
            iscsi_inquiry_sync(
                self.ctx.as_ptr(),
                self.lun,
                1,
                VPD_DEVICE_IDENTIFICATION,
                255,
            )
        };
        if task.is_null() {
            return None;
        }
        let mut sense = ScsiSense::zeroed();
        // SAFETY: as in read_capacity16: the unmarshalled page and its
        // designator list live with the task, read before it is freed below;
        // each designator's bytes are `designator_length` long.
        unsafe {
            let mut found: Vec<(c_int, c_int, Vec<u8>)> = Vec::new();
            if scsi_task_get_status(task, &mut sense) == STATUS_GOOD {
                let page = scsi_datain_unmarshall(task).cast::<ScsiDeviceIdentification>();
                let mut d = if page.is_null() {
                    ptr::null_mut()
                } else {
                    (*page).designators
                };
                while !d.is_null() {
                    let len = usize::try_from((*d).designator_length).unwrap_or(0);
                    if (*d).association == ASSOCIATION_LOGICAL_UNIT
                        && len > 0
                        && !(*d).designator.is_null()
                    {
                        let bytes = std::slice::from_raw_parts((*d).designator.cast::<u8>(), len);
                        found.push(((*d).designator_type, (*d).code_set, bytes.to_vec()));
                    }
                    d = (*d).next;
                }
            }
            scsi_free_scsi_task(task);
            best_designator(&found)
        }
    }

    /// Whether the LUN accepts DPO and FUA (the DPOFUA bit of MODE SENSE(10));
    /// `None` when MODE SENSE fails or cannot be parsed.
    pub fn dpofua(&mut self) -> Option<bool> {
        // SAFETY: live, logged-in context; the task returned is ours to free.
        let task = unsafe {
            iscsi_modesense10_sync(self.ctx.as_ptr(), self.lun, 0, 1, 0, MODE_PAGE_ALL, 0, 255)
        };
        if task.is_null() {
            return None;
        }
        let mut sense = ScsiSense::zeroed();
        // SAFETY: as in read_capacity16.
        unsafe {
            let status = scsi_task_get_status(task, &mut sense);
            let r = if status == STATUS_GOOD {
                let ms = scsi_datain_unmarshall(task).cast::<ScsiModeSense>();
                (!ms.is_null()).then(|| (*ms).device_specific_parameter & DPOFUA != 0)
            } else {
                None
            };
            scsi_free_scsi_task(task);
            r
        }
    }

    /// Pointer to slot `tag`.
    fn slot(&self, tag: u32) -> *mut CbSlot {
        debug_assert!((tag as usize) < self.nslots);
        // SAFETY: tag < nslots, inside the array allocated in connect.
        unsafe { self.slots.add(tag as usize) }
    }

    /// Common submit path: take a tag, let `start` create the task, record it.
    fn submit(
        &mut self,
        start: impl FnOnce(*mut IscsiContext, c_int, *mut CbSlot) -> *mut ScsiTask,
    ) -> Result<u32, String> {
        let tag = self.free.pop().ok_or("no free iSCSI tag")?;
        let slot = self.slot(tag);
        // SAFETY: the slot is free (not referenced by libiscsi); no reference
        // to it outlives this block.
        unsafe {
            (*slot).state = SLOT_SUBMITTING;
            (*slot).task = ptr::null_mut();
        }
        let task = start(self.ctx.as_ptr(), self.lun, slot);
        // SAFETY: as above; if the callback already ran (libiscsi completes a
        // task inside the submit call only on allocation failure) it could not
        // free the task it did not know, so it is freed here.
        unsafe {
            if task.is_null() {
                if (*slot).state == SLOT_DONE {
                    // The completion is in the done list and frees the tag when drained.
                    return Err(self.error());
                }
                (*slot).state = SLOT_FREE;
                self.free.push(tag);
                return Err(self.error());
            }
            if (*slot).state == SLOT_DONE {
                scsi_free_scsi_task(task);
            } else {
                (*slot).task = task;
                (*slot).state = SLOT_IN_FLIGHT;
            }
        }
        Ok(tag)
    }

    /// Start READ(16) of `buf`'s length at `lba` straight into `buf` (no
    /// copy: the task's data-in iovec points at it). Returns the tag.
    ///
    /// # Safety
    /// libiscsi writes into `buf` until this tag's [`Done`] is drained or the
    /// session is dropped (which cancels the task first), whatever becomes of
    /// the `IoBuf` handle: the caller keeps the lease alive until then.
    pub unsafe fn read16(&mut self, lba: u64, block_size: u32, buf: &IoBuf) -> Result<u32, String> {
        let (len, buf) = (buf.len(), buf.as_mut_ptr());
        self.submit(|ctx, lun, slot| {
            // SAFETY: the slot is ours until drained; its iovec stays put (heap
            // array) while the task is live; `buf` is leased until then (the
            // caller's contract).
            unsafe {
                (*slot).iov = ScsiIovec {
                    iov_base: buf.cast(),
                    iov_len: len as usize,
                };
                iscsi_read16_iov_task(
                    ctx,
                    lun,
                    lba,
                    len,
                    block_size as c_int,
                    0,
                    0,
                    0,
                    0,
                    0,
                    on_task_done,
                    slot.cast(),
                    &mut (*slot).iov,
                    1,
                )
            }
        })
    }

    /// Start WRITE(16) of `buf` at `lba`, with the FUA bit if `fua`.
    /// libiscsi sends straight from `buf`. Returns the tag.
    ///
    /// # Safety
    /// libiscsi reads `buf` until this tag's [`Done`] is drained or the
    /// session is dropped, as for [`Session::read16`].
    pub unsafe fn write16(
        &mut self,
        lba: u64,
        block_size: u32,
        buf: &IoBuf,
        fua: bool,
    ) -> Result<u32, String> {
        let (len, buf) = (buf.len(), buf.as_ptr());
        self.submit(|ctx, lun, slot| {
            // SAFETY: `buf` is leased for `len` bytes until the tag is drained
            // (the caller's contract); libiscsi only reads it (the mut in its
            // signature is historical).
            unsafe {
                iscsi_write16_task(
                    ctx,
                    lun,
                    lba,
                    buf.cast_mut(),
                    len,
                    block_size as c_int,
                    0,
                    0,
                    c_int::from(fua),
                    0,
                    0,
                    on_task_done,
                    slot.cast(),
                )
            }
        })
    }

    /// Start SYNCHRONIZE CACHE(16) of `blocks` blocks at `lba`.
    pub fn sync_cache16(&mut self, lba: u64, blocks: u32) -> Result<u32, String> {
        self.submit(|ctx, lun, slot| {
            // SAFETY: no user memory involved; slot as in read16.
            unsafe {
                iscsi_synchronizecache16_task(
                    ctx,
                    lun,
                    lba,
                    blocks,
                    0,
                    0,
                    on_task_done,
                    slot.cast(),
                )
            }
        })
    }

    /// The socket libiscsi uses.
    pub fn fd(&self) -> RawFd {
        // SAFETY: live context.
        unsafe { iscsi_get_fd(self.ctx.as_ptr()) }
    }

    /// The poll events libiscsi wants now (0: none for the moment).
    pub fn which_events(&self) -> i16 {
        // SAFETY: live context.
        unsafe { iscsi_which_events(self.ctx.as_ptr()) as i16 }
    }

    /// Whether PDUs are waiting to be written.
    pub fn has_output(&self) -> bool {
        // SAFETY: live context.
        unsafe { iscsi_out_queue_length(self.ctx.as_ptr()) > 0 }
    }

    /// Let libiscsi handle `revents` (0 for timeouts only); callbacks of
    /// finished tasks run here. An error means the session is broken.
    pub fn service(&mut self, revents: i16) -> Result<(), String> {
        // SAFETY: live context; callbacks touch only the slots and done list,
        // which no Rust reference borrows during this call.
        let rc = unsafe { iscsi_service(self.ctx.as_ptr(), c_int::from(revents)) };
        if rc < 0 { Err(self.error()) } else { Ok(()) }
    }

    /// Move finished tasks to `out`, freeing their tags. Returns how many.
    pub fn drain(&mut self, out: &mut Vec<Done>) -> usize {
        // SAFETY: the done list is only touched by callbacks, which cannot run
        // during this block (no libiscsi call is made in it).
        let done = unsafe { &mut *self.done };
        let n = done.len();
        for d in done.iter() {
            let slot = self.slot(d.tag);
            // SAFETY: the slot's task has finished; libiscsi no longer refers to it.
            unsafe {
                (*slot).state = SLOT_FREE;
                (*slot).iov = ScsiIovec {
                    iov_base: ptr::null_mut(),
                    iov_len: 0,
                };
            }
            self.free.push(d.tag);
        }
        out.append(done);
        n
    }
}

/// Human text of a task status and its sense.
pub fn status_text(status: i32, key: i32, ascq: i32) -> String {
    match status {
        STATUS_GOOD => "GOOD".into(),
        STATUS_CHECK_CONDITION => format!("CHECK CONDITION, {}", sense_text(key, ascq)),
        8 => "BUSY".into(),
        0x18 => "RESERVATION CONFLICT".into(),
        0x28 => "TASK SET FULL".into(),
        0x40 => "TASK ABORTED".into(),
        STATUS_CANCELLED => "cancelled (session torn down)".into(),
        STATUS_ERROR => "transport error".into(),
        STATUS_TIMEOUT => "timed out".into(),
        other => format!("SCSI status {other:#x}"),
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: destroying the context runs the callback of every task still
        // in flight (SCSI_STATUS_CANCELLED), which writes into the slots and the
        // done list: both are freed only afterwards, from the raw pointers
        // Box::into_raw produced in connect. After destroy no callback can run.
        unsafe {
            iscsi_destroy_context(self.ctx.as_ptr());
            drop(Box::from_raw(ptr::slice_from_raw_parts_mut(
                self.slots,
                self.nslots,
            )));
            drop(Box::from_raw(self.done));
        }
    }
}

// SAFETY: a Session is used by one thread at a time (the engine moves the
// backend to its worker thread and drives it from there only); libiscsi keeps
// no thread-local state, and the raw pointers it holds are owned by the session.
unsafe impl Send for Session {}

#[cfg(test)]
mod tests {
    use super::{CODE_SET_BINARY, best_designator};

    #[test]
    fn the_naa_designator_is_preferred_and_text_ones_are_trimmed() {
        let t10 = (1, 2, b"LIO-ORG disk  \0".to_vec());
        let naa = (3, CODE_SET_BINARY, vec![0x60, 0x01, 0x40, 0x5a]);
        let eui = (2, CODE_SET_BINARY, vec![1, 2]);
        assert_eq!(
            best_designator(&[t10.clone(), eui.clone(), naa]).as_deref(),
            Some("naa 6001405a")
        );
        assert_eq!(
            best_designator(&[t10.clone(), eui]).as_deref(),
            Some("eui-64 0102")
        );
        assert_eq!(best_designator(&[t10]).as_deref(), Some("t10 LIO-ORG disk"));
        assert_eq!(best_designator(&[(4, CODE_SET_BINARY, vec![0, 1])]), None);
    }

    #[test]
    fn sense_codes_libiscsi_leaves_unnamed_are_named_with_their_code() {
        assert_eq!(
            super::sense_text(0x3, 0x1100),
            "MEDIUM_ERROR (0x3)/UNRECOVERED_READ_ERROR (0x1100)"
        );
        assert_eq!(super::sense_text(0x3, 0x1234), "MEDIUM_ERROR (0x3)/0x1234");
    }
}
