// SPDX-License-Identifier: Apache-2.0
/* linfer_status: what every function of the C API (linfer.h, which includes this header) returns,
 * and the code of every failure inside the library, from the kernels up (linfer/types/status.h).
 * It sits with the lowest layer's headers so that every layer names failures with the same codes;
 * it is installed beside linfer.h. */
#ifndef LINFER_LINFER_STATUS_H_
#define LINFER_LINFER_STATUS_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef enum linfer_status {
  LINFER_OK = 0,
  LINFER_ERROR_INVALID_ARGUMENT = 1, /* a null pointer, a bad option or a bad input */
  LINFER_ERROR_IO = 2,               /* the file could not be opened, read or mapped */
  LINFER_ERROR_INVALID_MODEL = 3,    /* the file is not a valid linfer model */
  LINFER_ERROR_UNSUPPORTED = 4,      /* valid, but needs a feature this build lacks */
  LINFER_ERROR_OUT_OF_MEMORY = 5,
  LINFER_ERROR_BUFFER_TOO_SMALL = 6, /* a caller-supplied arena is smaller than needed */
  LINFER_ERROR_INTERNAL = 7
} linfer_status;

#ifdef __cplusplus
}
#endif

#endif /* LINFER_LINFER_STATUS_H_ */
