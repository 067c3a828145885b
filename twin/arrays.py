"""Array types of the twin's struct-of-arrays models, named once for every annotation.

The twin's state is columns of numpy arrays, one element per GPU, rack, loop or job.
These aliases say which dtype a column holds, so that a signature reads
``power_w: FloatArray`` instead of a bare ``np.ndarray``:

- :data:`FloatArray`  ``float64`` quantities (watts, °C, seconds, fractions);
- :data:`IntArray`    integer ids, indices and counts of any width (``int8`` kinds, ``int32``
  positions into another table, ``int64`` counts);
- :data:`BoolArray`   masks and flags (``_flag``, ``mask``);
- :data:`Floats`      a float array or one float broadcast against it (numpy's broadcasting
  makes most models accept both);
- :data:`AnyArray`    an array whose dtype the function does not fix (a column copied,
  indexed or compared whatever it holds).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.integer[Any]]
BoolArray: TypeAlias = npt.NDArray[np.bool_]
AnyArray: TypeAlias = npt.NDArray[Any]
Floats: TypeAlias = FloatArray | float
