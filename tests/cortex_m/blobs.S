/* SPDX-License-Identifier: Apache-2.0 */
/* The model and the test cases, linked into flash as they are: the model 64-byte aligned, as the
   runtime reads its weights in place (linfer_model_load_in_place). */
  .section .rodata.linfer_cm_model, "a"
  .balign 64
  .global linfer_cm_model
  .global linfer_cm_model_end
linfer_cm_model:
  .incbin LINFER_CM_MODEL_FILE
linfer_cm_model_end:

  .section .rodata.linfer_cm_cases, "a"
  .balign 4
  .global linfer_cm_cases
  .global linfer_cm_cases_end
linfer_cm_cases:
  .incbin LINFER_CM_CASES_FILE
linfer_cm_cases_end:
