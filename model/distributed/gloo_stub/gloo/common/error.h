// Stands in for Gloo's <gloo/common/error.h>: see gloo/stub.h.
#pragma once

#include "gloo/stub.h"
