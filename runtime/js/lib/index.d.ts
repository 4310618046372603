// SPDX-License-Identifier: Apache-2.0
// Types of the linfer package (runtime/js/lib/core.js).

/** What a model file says about itself: the C API's linfer_model_info (Python's Model.info). */
export interface ModelInfo {
  vocab_size: number;          // 0: the model takes embeddings (not offered by this package)
  dim: number;
  num_layers: number;
  num_heads: number;
  head_dim: number;
  ff_dim: number;
  max_seq_len: number;         // n: runs take 1..n tokens
  proj_len: number;            // k (Linformer)
  head: 'none' | 'lm_logits' | 'classifier' | 'pooled' | string;
  output_channels: number;     // columns of the output
  parameter_count: number;
  file_bytes: number;
  resident_weight_bytes: number;
  format_version: number;
  attention_kind: string;      // "linformer", ...
  weight_dtype: string;        // "f32", "f16", "int8" or "mixed"
  n: number;                   // = max_seq_len
  k: number;                   // = proj_len
  num_classes: number;         // output_channels of a classifier, else 0
}

export interface SessionOptions {
  /** Longest input the session accepts (default: the model's n). */
  maxSeqLen?: number;
  /** Threads of the session's runs, 1..moduleInfo().threads (default: moduleInfo().threads). */
  threads?: number;
}

export interface LoadOptions {
  /** More than 1: a threads module where SharedArrayBuffer is usable (default 1). */
  threads?: number;
}

export interface Output {
  /** rows x cols floats, row-major: a copy, the caller's to keep. */
  data: Float32Array;
  rows: number;
  cols: number;
}

/** Every failure: `message` is the C API's one-line message. */
export class LinferError extends Error {
  /** The linfer_status code (1 INVALID_ARGUMENT ... 7 INTERNAL). */
  status: number;
  statusName: 'INVALID_ARGUMENT' | 'IO' | 'INVALID_MODEL' | 'UNSUPPORTED' | 'OUT_OF_MEMORY' |
    'BUFFER_TOO_SMALL' | 'INTERNAL' | string;
}

export class Model {
  /** Verifies and loads the bytes of an .lfm file (the library keeps its own copy). */
  static fromBytes(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): Promise<Model>;
  readonly info: ModelInfo;
  /** Floating-point operations of one run over `length` tokens (multiply-add = 2). */
  flops(length: number): number;
  /** The model's ids of a text with the tokenizer its file carries (template included). */
  tokenize(text: string): Int32Array;
  /** Whether the model file carries a tokenizer. */
  readonly hasTokenizer: boolean;
  /**
   * Sentence embeddings of a pooled model with a tokenizer (info.head 'pooled'): one Float32Array
   * of info.dim values for a string, one per string for an array. A text longer than the model's
   * n ids is cut to n, keeping its closing id. LinferError (UNSUPPORTED) for another model.
   */
  embed(text: string): Float32Array;
  embed(texts: readonly string[]): Float32Array[];
  /** A session with all of its memory planned and allocated now. */
  createSession(options?: SessionOptions): Session;
  /** Releases the model's memory once its sessions are disposed too. Idempotent. */
  dispose(): void;
}

export class Session {
  readonly maxSeqLen: number;
  readonly threads: number;
  /** Runs on 1..maxSeqLen token ids; allocates no wasm memory. */
  run(ids: Int32Array | ArrayLike<number>): Output;
  /** run() on the model's ids of a text (Model.tokenize). */
  runText(text: string): Output;
  /** One line on the kernels the session runs. */
  describe(): string;
  /** Releases the session's memory. Idempotent. */
  dispose(): void;
}

/** The library's version string. */
export function version(): Promise<string>;
/** Bytes of the wasm heap in use and the wasm memory's size. */
export function heapStats(): Promise<{ inUse: number; memoryBytes: number }>;
/** The module this engine runs, and why. */
export interface ModuleInfo {
  simd: 'relaxed-simd' | 'simd128';
  file: 'linfer-relaxed.wasm' | 'linfer.wasm' | 'linfer-relaxed-threads.wasm' | 'linfer-threads.wasm';
  /** asked: LINFER_WASM_MODULE; threads: load({ threads }). */
  reason: 'relaxed probe passed' | 'asked' | 'relaxed probe failed' | 'no relaxed module' | 'threads';
  /** Whether relaxed SIMD passed its probes; null when the package has no relaxed module. */
  relaxedProbe: boolean | null;
  /** The relaxed modules' two int8 dot products timed on the same work (microseconds); else null. */
  timing: { relaxedUs: number; simd128Us: number; reps: number; injected: boolean; ms: number } | null;
  /** The int8 dense layers' kernel: in a relaxed module the faster of the two in `timing`. */
  int8Kernel: 'dense_int8_wasm_relaxed' | 'dense_int8_wasm_simd128';
  /** Milliseconds the probes and the timing took. */
  chooseMs: number;
  /** The most threads a session may run on (1 but in a threads module). */
  threads: number;
  /** What load() asked for (1 without load()). */
  threadsAsked: number;
  /** Why more than one thread was asked for and one is given (e.g. a page not cross-origin isolated), or null. */
  threadsReason: string | null;
}
/** The module this engine runs: relaxed SIMD where its probes pass, else SIMD128. */
export function moduleInfo(): Promise<ModuleInfo>;
/** Chooses and loads the module, before any other call: { threads: N } asks for the threads module. */
export function load(options?: LoadOptions): Promise<ModuleInfo>;

declare const linfer: {
  Model: typeof Model;
  Session: typeof Session;
  LinferError: typeof LinferError;
  version: typeof version;
  heapStats: typeof heapStats;
  moduleInfo: typeof moduleInfo;
  load: typeof load;
};
export default linfer;
