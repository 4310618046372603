// SPDX-License-Identifier: Apache-2.0
//! Raw FFI declarations of linfer's C API, `runtime/include/linfer/linfer.h` (see there for what
//! each function does). The safe API is the `linfer` crate.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

pub type linfer_status = c_int;
pub const LINFER_OK: linfer_status = 0;
pub const LINFER_ERROR_INVALID_ARGUMENT: linfer_status = 1;
pub const LINFER_ERROR_IO: linfer_status = 2;
pub const LINFER_ERROR_INVALID_MODEL: linfer_status = 3;
pub const LINFER_ERROR_UNSUPPORTED: linfer_status = 4;
pub const LINFER_ERROR_OUT_OF_MEMORY: linfer_status = 5;
pub const LINFER_ERROR_BUFFER_TOO_SMALL: linfer_status = 6;
pub const LINFER_ERROR_INTERNAL: linfer_status = 7;

#[repr(C)]
pub struct linfer_model {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct linfer_session {
    _opaque: [u8; 0],
}

pub type linfer_head_kind = c_int;
pub const LINFER_HEAD_NONE: linfer_head_kind = 0;
pub const LINFER_HEAD_LM_LOGITS: linfer_head_kind = 1;
pub const LINFER_HEAD_CLASSIFIER: linfer_head_kind = 2;
pub const LINFER_HEAD_POOLED: linfer_head_kind = 3;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct linfer_model_info {
    pub struct_size: usize,
    pub vocab_size: u32,
    pub dim: u32,
    pub num_layers: u32,
    pub num_heads: u32,
    pub head_dim: u32,
    pub ff_dim: u32,
    pub max_seq_len: u32,
    pub proj_len: u32,
    pub head: linfer_head_kind,
    pub output_channels: u32,
    pub parameter_count: u64,
    pub file_bytes: u64,
    pub resident_weight_bytes: u64,
    pub attention_kind: *const c_char,
    pub weight_dtype: *const c_char,
    pub format_version: u32,
}

pub type linfer_dense_path = c_int;
pub type linfer_row_pipeline = c_int;
pub type linfer_thread_wait = c_int;
pub type linfer_isa = c_int;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct linfer_session_options {
    pub struct_size: usize,
    pub max_seq_len: u32,
    pub num_threads: u32,
    pub arena: *mut c_void,
    pub arena_size: usize,
    pub enable_profiling: u32,
    pub dense_path: linfer_dense_path,
    pub row_pipeline: linfer_row_pipeline,
    pub pipeline_block_rows: u32,
    pub thread_wait: linfer_thread_wait,
    pub max_isa: linfer_isa,
    pub fp16_arithmetic: u32,
}

pub const LINFER_OP_KIND_COUNT: usize = 7;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct linfer_profile {
    pub milliseconds: [f64; LINFER_OP_KIND_COUNT],
    pub runs: u64,
}

extern "C" {
    pub fn linfer_version() -> *const c_char;
    pub fn linfer_status_string(status: linfer_status) -> *const c_char;
    pub fn linfer_last_error() -> *const c_char;

    pub fn linfer_model_load(path: *const c_char, out_model: *mut *mut linfer_model) -> linfer_status;
    pub fn linfer_model_load_from_memory(data: *const c_void, size: usize, out_model: *mut *mut linfer_model)
        -> linfer_status;
    pub fn linfer_model_load_in_place(data: *const c_void, size: usize, out_model: *mut *mut linfer_model)
        -> linfer_status;
    pub fn linfer_model_free(model: *mut linfer_model);
    pub fn linfer_model_get_info(model: *const linfer_model, out_info: *mut linfer_model_info) -> linfer_status;
    pub fn linfer_model_flops(model: *const linfer_model, length: usize) -> u64;

    pub fn linfer_session_options_default() -> linfer_session_options;
    pub fn linfer_session_arena_size(
        model: *const linfer_model,
        options: *const linfer_session_options,
        out_bytes: *mut usize,
    ) -> linfer_status;
    pub fn linfer_session_create(
        model: *const linfer_model,
        options: *const linfer_session_options,
        out_session: *mut *mut linfer_session,
    ) -> linfer_status;
    pub fn linfer_session_free(session: *mut linfer_session);
    pub fn linfer_session_run(session: *mut linfer_session, token_ids: *const i32, length: usize) -> linfer_status;
    pub fn linfer_session_run_embeddings(session: *mut linfer_session, embeddings: *const f32, length: usize)
        -> linfer_status;
    pub fn linfer_session_step(session: *mut linfer_session, token_id: i32) -> linfer_status;
    pub fn linfer_session_reset_state(session: *mut linfer_session);
    pub fn linfer_session_output(
        session: *const linfer_session,
        out_data: *mut *const f32,
        out_rows: *mut usize,
        out_cols: *mut usize,
    ) -> linfer_status;
    pub fn linfer_session_profile(session: *const linfer_session, out: *mut linfer_profile) -> linfer_status;
    pub fn linfer_session_profile_reset(session: *mut linfer_session);
    pub fn linfer_op_kind_name(kind: c_int) -> *const c_char;
    pub fn linfer_session_hidden_states(
        session: *const linfer_session,
        out_data: *mut *const f32,
        out_rows: *mut usize,
        out_cols: *mut usize,
    ) -> linfer_status;
    pub fn linfer_session_memory(
        session: *const linfer_session,
        out_arena_bytes: *mut usize,
        out_packed_weight_bytes: *mut usize,
    ) -> linfer_status;
    pub fn linfer_session_describe(session: *const linfer_session) -> *const c_char;

    pub fn linfer_tokenize(
        model: *const linfer_model,
        utf8: *const c_char,
        length: usize,
        ids: *mut i32,
        capacity: usize,
        out_count: *mut usize,
    ) -> linfer_status;
    pub fn linfer_detokenize(
        model: *const linfer_model,
        ids: *const i32,
        count: usize,
        utf8: *mut c_char,
        capacity: usize,
        out_length: *mut usize,
    ) -> linfer_status;
    pub fn linfer_model_has_tokenizer(model: *const linfer_model) -> c_int;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The library reports its own sizeof(linfer_session_options): the struct here must match.
    #[test]
    fn options_struct_matches_the_library() {
        let o = unsafe { linfer_session_options_default() };
        assert_eq!(o.struct_size, std::mem::size_of::<linfer_session_options>());
        assert!(o.arena.is_null());
    }

    #[test]
    fn status_strings() {
        let s = unsafe { std::ffi::CStr::from_ptr(linfer_status_string(LINFER_ERROR_INVALID_MODEL)) };
        assert!(!s.to_bytes().is_empty());
    }
}
