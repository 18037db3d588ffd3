// Stands in for Gloo's <gloo/transport/device.h>: see gloo/stub.h.
#pragma once

#include "gloo/stub.h"
