// SPDX-License-Identifier: Apache-2.0
package org.linfer;

/** What linfer_model_get_info reports: the model's shape and weights. */
public final class ModelInfo {
  /** linfer_head_kind: what the output holds. */
  public enum Head {
    /** hidden states [T, dim] */
    NONE,
    /** logits [T, vocabSize] */
    LM_LOGITS,
    /** class logits [1, classes] */
    CLASSIFIER,
    /** the pooled vector [1, dim], a sentence embedding (Model.embed) */
    POOLED
  }

  /** 0: the model takes embeddings. */
  public final int vocabSize;
  public final int dim;
  public final int numLayers;
  public final int numHeads;
  public final int headDim;
  public final int ffDim;
  /** n: runs take 1..n tokens. */
  public final int maxSeqLen;
  /** k: the Linformer projection's length. */
  public final int projLen;
  public final Head head;
  /** Columns of the output. */
  public final int outputChannels;
  public final long parameterCount;
  public final long fileBytes;
  /** Bytes of weights the model holds for all its sessions. */
  public final long residentWeightBytes;
  public final int formatVersion;
  /** "linformer", ... */
  public final String attentionKind;
  /** "f32", "f16", "int8" or "mixed". */
  public final String weightDtype;

  ModelInfo(long[] v, String[] names) {
    vocabSize = (int) v[0];
    dim = (int) v[1];
    numLayers = (int) v[2];
    numHeads = (int) v[3];
    headDim = (int) v[4];
    ffDim = (int) v[5];
    maxSeqLen = (int) v[6];
    projLen = (int) v[7];
    head = v[8] >= 0 && v[8] < Head.values().length ? Head.values()[(int) v[8]] : Head.NONE;
    outputChannels = (int) v[9];
    parameterCount = v[10];
    fileBytes = v[11];
    residentWeightBytes = v[12];
    formatVersion = (int) v[13];
    attentionKind = names[0];
    weightDtype = names[1];
  }

  @Override
  public String toString() {
    return "model: " + attentionKind + ", " + numLayers + " layers, dim " + dim + ", " + numHeads
        + " heads, n=" + maxSeqLen + ", k=" + projLen + ", " + weightDtype + " weights";
  }
}
