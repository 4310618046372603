// SPDX-License-Identifier: Apache-2.0
//! Safe Rust API over linfer's C API: load a `.lfm` model, create sessions with all their memory
//! planned up front, run on token ids.
//!
//! ```no_run
//! let model = linfer::Model::load("examples/models/langid.int8.lfm")?;
//! let mut session = model.session(0, 1)?; // the model's n, one thread
//! let ids: Vec<i32> = "Guten Morgen".bytes().map(i32::from).collect();
//! let out = session.run(&ids)?; // borrows the session's memory until the next run
//! println!("{} x {}: {:?}", out.rows(), out.cols(), out.data());
//! # Ok::<(), linfer::Error>(())
//! ```
//!
//! Threads: a [`Model`] is immutable, `Send + Sync` and cheap to clone (a reference count); each
//! thread makes its own [`Session`] (`Send`, not `Sync`: one thread at a time, as the C API asks).
//! A session keeps its model's memory alive, so sessions may outlive the `Model` value they came
//! from. Freed objects cannot be used: Rust's ownership rules this out at compile time.
//!
//! ```compile_fail
//! let model = linfer::Model::load("m.lfm").unwrap();
//! let mut session = model.session(0, 1).unwrap();
//! drop(session);
//! session.run(&[1, 2, 3]).unwrap(); // error: use of a moved value
//! ```
//!
//! ```compile_fail
//! let model = linfer::Model::load("m.lfm").unwrap();
//! let mut session = model.session(0, 1).unwrap();
//! let out = session.run(&[1, 2, 3]).unwrap();
//! session.run(&[4]).unwrap(); // error: `out` still borrows the last run's output
//! println!("{:?}", out.data());
//! ```
//!
//! ```compile_fail
//! fn shared<T: Sync>(_: &T) {}
//! let model = linfer::Model::load("m.lfm").unwrap();
//! shared(&model.session(0, 1).unwrap()); // error: a Session is not Sync
//! ```

/// The raw C API (the linfer-sys crate), for calls the safe API does not wrap.
pub use linfer_sys as sys;
use std::ffi::{CStr, CString};
use std::fmt;
use std::os::raw::c_char;
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// The C API's failure kinds (linfer_status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    InvalidArgument,
    Io,
    InvalidModel,
    Unsupported,
    OutOfMemory,
    BufferTooSmall,
    Internal,
}

impl Status {
    fn from_code(code: sys::linfer_status) -> Status {
        match code {
            sys::LINFER_ERROR_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::LINFER_ERROR_IO => Status::Io,
            sys::LINFER_ERROR_INVALID_MODEL => Status::InvalidModel,
            sys::LINFER_ERROR_UNSUPPORTED => Status::Unsupported,
            sys::LINFER_ERROR_OUT_OF_MEMORY => Status::OutOfMemory,
            sys::LINFER_ERROR_BUFFER_TOO_SMALL => Status::BufferTooSmall,
            _ => Status::Internal,
        }
    }

    /// The value of the C enum.
    pub fn code(self) -> i32 {
        match self {
            Status::InvalidArgument => sys::LINFER_ERROR_INVALID_ARGUMENT,
            Status::Io => sys::LINFER_ERROR_IO,
            Status::InvalidModel => sys::LINFER_ERROR_INVALID_MODEL,
            Status::Unsupported => sys::LINFER_ERROR_UNSUPPORTED,
            Status::OutOfMemory => sys::LINFER_ERROR_OUT_OF_MEMORY,
            Status::BufferTooSmall => sys::LINFER_ERROR_BUFFER_TOO_SMALL,
            Status::Internal => sys::LINFER_ERROR_INTERNAL,
        }
    }
}

/// A failure: the C API's status and its one-line message (linfer_last_error()), or the
/// binding's own message for what it refuses before calling the library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    pub fn status(&self) -> Status {
        self.status
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    fn invalid(message: impl Into<String>) -> Error {
        Error { status: Status::InvalidArgument, message: message.into() }
    }
    fn unsupported(message: impl Into<String>) -> Error {
        Error { status: Status::Unsupported, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// Ok, or the status with linfer_last_error() (read on this thread, right after the call).
fn check(status: sys::linfer_status) -> Result<()> {
    if status == sys::LINFER_OK {
        Ok(())
    } else {
        Err(Error { status: Status::from_code(status), message: cstr(unsafe { sys::linfer_last_error() }) })
    }
}

/// The version of the loaded library, e.g. "0.1.0".
pub fn library_version() -> String {
    cstr(unsafe { sys::linfer_version() })
}

/// What the output holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// hidden states [T, dim]
    None,
    /// logits [T, vocab_size]
    LmLogits,
    /// class logits [1, classes]
    Classifier,
    /// the pooled vector [1, dim], a sentence embedding ([`Model::embed`])
    Pooled,
}

/// What linfer_model_get_info reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    /// 0: the model takes embeddings.
    pub vocab_size: u32,
    pub dim: u32,
    pub num_layers: u32,
    pub num_heads: u32,
    pub head_dim: u32,
    pub ff_dim: u32,
    /// n: runs take 1..n tokens.
    pub max_seq_len: u32,
    /// k: the Linformer projection's length.
    pub proj_len: u32,
    pub head: Head,
    /// Columns of the output.
    pub output_channels: u32,
    pub parameter_count: u64,
    pub file_bytes: u64,
    /// Bytes of weights the model holds for all its sessions.
    pub resident_weight_bytes: u64,
    /// "linformer", ...
    pub attention_kind: String,
    /// "f32", "f16", "int8" or "mixed".
    pub weight_dtype: String,
    pub format_version: u32,
}

impl fmt::Display for ModelInfo {
    /// linfer-run's first line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "model: {}, {} layers, dim {}, {} heads, n={}, k={}, {} weights",
            self.attention_kind, self.num_layers, self.dim, self.num_heads, self.max_seq_len, self.proj_len,
            self.weight_dtype
        )
    }
}

/// Bytes in a 64-byte aligned buffer, for [`Model::in_place`].
pub struct AlignedBytes {
    blocks: Vec<[u64; 8]>,
    len: usize,
}

impl AlignedBytes {
    pub fn new(bytes: &[u8]) -> AlignedBytes {
        // Vec<[u64; 8]> is 8-aligned only: over-allocate by a block and start at a 64-byte boundary.
        let blocks = vec![[0u64; 8]; bytes.len() / 64 + 2];
        let mut a = AlignedBytes { blocks, len: bytes.len() };
        let start = a.offset();
        let base = a.blocks.as_mut_ptr() as *mut u8;
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(start), bytes.len()) };
        a
    }

    fn offset(&self) -> usize {
        let address = self.blocks.as_ptr() as usize;
        (64 - (address & 63)) & 63
    }

    pub fn as_slice(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts((self.blocks.as_ptr() as *const u8).add(self.offset()), self.len) }
    }
}

struct ModelInner {
    ptr: NonNull<sys::linfer_model>,
    _bytes: Option<AlignedBytes>, // read in place: freed after the model
}

impl Drop for ModelInner {
    fn drop(&mut self) {
        unsafe { sys::linfer_model_free(self.ptr.as_ptr()) };
    }
}

// The C API: a linfer_model is immutable and may be shared by any number of threads and sessions.
unsafe impl Send for ModelInner {}
unsafe impl Sync for ModelInner {}

/// A loaded model: immutable, shared across threads (clone it, or share a reference).
#[derive(Clone)]
pub struct Model {
    inner: Arc<ModelInner>,
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model").field("ptr", &self.inner.ptr).finish()
    }
}

impl Model {
    fn wrap(ptr: *mut sys::linfer_model, bytes: Option<AlignedBytes>) -> Model {
        Model { inner: Arc::new(ModelInner { ptr: NonNull::new(ptr).expect("linfer returned a null model"), _bytes: bytes }) }
    }

    /// Loads a .lfm file.
    pub fn load(path: impl AsRef<Path>) -> Result<Model> {
        let path = path.as_ref();
        #[cfg(unix)]
        let bytes = {
            use std::os::unix::ffi::OsStrExt;
            path.as_os_str().as_bytes().to_vec()
        };
        #[cfg(not(unix))]
        let bytes = path.to_string_lossy().into_owned().into_bytes();
        let c = CString::new(bytes).map_err(|_| Error::invalid("the model path contains a NUL character"))?;
        let mut model = ptr::null_mut();
        check(unsafe { sys::linfer_model_load(c.as_ptr(), &mut model) })?;
        Ok(Model::wrap(model, None))
    }

    /// A model from a copy of the bytes (the caller may drop them afterwards).
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        let mut model = ptr::null_mut();
        check(unsafe { sys::linfer_model_load_from_memory(bytes.as_ptr().cast(), bytes.len(), &mut model) })?;
        Ok(Model::wrap(model, None))
    }

    /// A model that reads the bytes where they lie, without a copy; it owns them until it is freed.
    pub fn in_place(bytes: AlignedBytes) -> Result<Model> {
        let mut model = ptr::null_mut();
        let s = bytes.as_slice();
        check(unsafe { sys::linfer_model_load_in_place(s.as_ptr().cast(), s.len(), &mut model) })?;
        Ok(Model::wrap(model, Some(bytes)))
    }

    /// A model that reads static bytes in place (e.g. `include_bytes!` into a 64-byte aligned
    /// static); the library refuses bytes that are not 64-byte aligned.
    pub fn from_static(bytes: &'static [u8]) -> Result<Model> {
        let mut model = ptr::null_mut();
        check(unsafe { sys::linfer_model_load_in_place(bytes.as_ptr().cast(), bytes.len(), &mut model) })?;
        Ok(Model::wrap(model, None))
    }

    fn ptr(&self) -> *const sys::linfer_model {
        self.inner.ptr.as_ptr()
    }

    pub fn info(&self) -> ModelInfo {
        let mut i: sys::linfer_model_info = unsafe { std::mem::zeroed() };
        i.struct_size = std::mem::size_of::<sys::linfer_model_info>();
        // Cannot fail: a valid model and struct_size.
        check(unsafe { sys::linfer_model_get_info(self.ptr(), &mut i) }).expect("linfer_model_get_info");
        ModelInfo {
            vocab_size: i.vocab_size,
            dim: i.dim,
            num_layers: i.num_layers,
            num_heads: i.num_heads,
            head_dim: i.head_dim,
            ff_dim: i.ff_dim,
            max_seq_len: i.max_seq_len,
            proj_len: i.proj_len,
            head: match i.head {
                sys::LINFER_HEAD_LM_LOGITS => Head::LmLogits,
                sys::LINFER_HEAD_CLASSIFIER => Head::Classifier,
                sys::LINFER_HEAD_POOLED => Head::Pooled,
                _ => Head::None,
            },
            output_channels: i.output_channels,
            parameter_count: i.parameter_count,
            file_bytes: i.file_bytes,
            resident_weight_bytes: i.resident_weight_bytes,
            attention_kind: cstr(i.attention_kind),
            weight_dtype: cstr(i.weight_dtype),
            format_version: i.format_version,
        }
    }

    /// Floating-point operations of one run over `length` tokens.
    pub fn flops(&self, length: usize) -> u64 {
        unsafe { sys::linfer_model_flops(self.ptr(), length) }
    }

    /// A session: max_seq_len 0 is the model's n; threads 0 or 1 run on the calling thread.
    pub fn session(&self, max_seq_len: u32, threads: u32) -> Result<Session> {
        let mut options = unsafe { sys::linfer_session_options_default() };
        options.max_seq_len = max_seq_len;
        options.num_threads = threads;
        let mut session = ptr::null_mut();
        check(unsafe { sys::linfer_session_create(self.ptr(), &options, &mut session) })?;
        let max_seq_len = if max_seq_len == 0 { self.info().max_seq_len } else { max_seq_len };
        Ok(Session {
            ptr: NonNull::new(session).expect("linfer returned a null session"),
            model: Arc::clone(&self.inner),
            max_seq_len: max_seq_len as usize,
            embeds: false,
        })
    }

    /// Sentence embeddings of `texts`, one row of `dim` floats per text, as Python's
    /// `Model.embed`: the model must carry its tokenizer and pool its output (`info().head ==
    /// Head::Pooled`), else an [`Status::Unsupported`] error. A text longer than the model's n ids
    /// is cut to n, keeping its closing id, as Hugging Face's truncation does. One session (one
    /// thread) for the call; [`Session::embed`] reuses a session.
    pub fn embed<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>> {
        self.check_embeds()?;
        let mut session = self.session(0, 1)?;
        texts.iter().map(|t| session.embed(t.as_ref())).collect()
    }

    /// Refuses, with Python's messages, a model that cannot embed text.
    fn check_embeds(&self) -> Result<()> {
        if self.info().head != Head::Pooled {
            return Err(Error::unsupported(
                "the model's output is not a pooled vector (convert it with its modules.json, or with linfer-convert --pooling cls|mean)",
            ));
        }
        if !self.has_tokenizer() {
            return Err(Error::unsupported("the model file carries no tokenizer"));
        }
        Ok(())
    }

    pub fn has_tokenizer(&self) -> bool {
        unsafe { sys::linfer_model_has_tokenizer(self.ptr()) != 0 }
    }

    /// Text to token ids with the tokenizer the model file carries, its template around them.
    pub fn tokenize(&self, text: &str) -> Result<Vec<i32>> {
        let mut count = 0usize;
        check(unsafe { sys::linfer_tokenize(self.ptr(), text.as_ptr().cast(), text.len(), ptr::null_mut(), 0, &mut count) })?;
        let mut ids = vec![0i32; count];
        if count > 0 {
            check(unsafe {
                sys::linfer_tokenize(self.ptr(), text.as_ptr().cast(), text.len(), ids.as_mut_ptr(), count, &mut count)
            })?;
        }
        Ok(ids)
    }

    /// Token ids back to text (special pieces left out).
    pub fn detokenize(&self, ids: &[i32]) -> Result<String> {
        let mut length = 0usize;
        check(unsafe { sys::linfer_detokenize(self.ptr(), ids.as_ptr(), ids.len(), ptr::null_mut(), 0, &mut length) })?;
        let mut text = vec![0u8; length];
        if length > 0 {
            check(unsafe {
                sys::linfer_detokenize(self.ptr(), ids.as_ptr(), ids.len(), text.as_mut_ptr().cast(), length, &mut length)
            })?;
        }
        String::from_utf8(text).map_err(|_| Error { status: Status::Internal, message: "detokenize gave ill-formed UTF-8".into() })
    }
}

/// A run's output or hidden states: rows x cols floats, row-major, in the session's memory
/// (valid until the next run, which the borrow enforces).
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
}

impl<'a> Output<'a> {
    pub fn rows(&self) -> usize {
        self.rows
    }
    pub fn cols(&self) -> usize {
        self.cols
    }
    pub fn data(&self) -> &'a [f32] {
        self.data
    }
    /// The values of one row.
    pub fn row(&self, r: usize) -> &'a [f32] {
        &self.data[r * self.cols..(r + 1) * self.cols]
    }
}

/// A session of a model: its memory planned at creation; runs allocate nothing.
pub struct Session {
    ptr: NonNull<sys::linfer_session>,
    model: Arc<ModelInner>, // the model outlives its sessions
    max_seq_len: usize,
    embeds: bool, // the model was found able to embed text (it does not change)
}

// The C API: a linfer_session must be used by one thread at a time; it may move between threads.
unsafe impl Send for Session {}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session").field("ptr", &self.ptr).finish()
    }
}

impl Session {
    /// Runs the model on 1..max_seq_len token ids; the output borrows the session's memory.
    pub fn run(&mut self, ids: &[i32]) -> Result<Output<'_>> {
        check(unsafe { sys::linfer_session_run(self.ptr.as_ptr(), ids.as_ptr(), ids.len()) })?;
        self.output()
    }

    /// The longest input this session accepts.
    pub fn max_seq_len(&self) -> usize {
        self.max_seq_len
    }

    /// The sentence embedding of `text` (`dim` floats) with this session, as [`Model::embed`]; a
    /// text longer than this session's max_seq_len ids is cut to it, keeping its closing id.
    pub fn embed(&mut self, text: &str) -> Result<Vec<f32>> {
        let model = Model { inner: Arc::clone(&self.model) };
        if !self.embeds {
            model.check_embeds()?;
            self.embeds = true;
        }
        let mut ids = model.tokenize(text)?;
        if ids.len() > self.max_seq_len {
            let last = *ids.last().expect("more ids than max_seq_len");
            ids.truncate(self.max_seq_len);
            ids[self.max_seq_len - 1] = last;
        }
        Ok(self.run(&ids)?.data().to_vec())
    }

    /// The last run's output.
    pub fn output(&self) -> Result<Output<'_>> {
        self.result(sys::linfer_session_output)
    }

    /// The last run's final hidden states [T, dim] (before any head).
    pub fn hidden_states(&self) -> Result<Output<'_>> {
        self.result(sys::linfer_session_hidden_states)
    }

    fn result(
        &self,
        f: unsafe extern "C" fn(*const sys::linfer_session, *mut *const f32, *mut usize, *mut usize) -> sys::linfer_status,
    ) -> Result<Output<'_>> {
        let (mut data, mut rows, mut cols) = (ptr::null(), 0usize, 0usize);
        check(unsafe { f(self.ptr.as_ptr(), &mut data, &mut rows, &mut cols) })?;
        let data = if rows * cols == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(data, rows * cols) } };
        Ok(Output { data, rows, cols })
    }

    /// One line on the kernels, threads and pipeline this session runs.
    pub fn describe(&self) -> String {
        cstr(unsafe { sys::linfer_session_describe(self.ptr.as_ptr()) })
    }

    /// The C session, for calls through [`sys`] (the session must stay alive and be used by one
    /// thread at a time).
    pub fn as_ptr(&mut self) -> *mut sys::linfer_session {
        self.ptr.as_ptr()
    }

    /// Bytes of the session's arena.
    pub fn arena_bytes(&self) -> usize {
        let (mut arena, mut packed) = (0usize, 0usize);
        let _ = check(unsafe { sys::linfer_session_memory(self.ptr.as_ptr(), &mut arena, &mut packed) });
        arena
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        unsafe { sys::linfer_session_free(self.ptr.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send<T: Send>() {}

    #[test]
    fn thread_traits() {
        assert_send_sync::<Model>();
        assert_send::<Session>();
        assert_send_sync::<Error>();
    }

    #[test]
    fn aligned_bytes() {
        for n in [0usize, 1, 63, 64, 1000] {
            let v: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let a = AlignedBytes::new(&v);
            assert_eq!(a.as_slice(), &v[..]);
            assert_eq!(a.as_slice().as_ptr() as usize % 64, 0);
        }
    }
}
