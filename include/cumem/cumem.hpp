#pragma once
#include <cumem/cumem.h>
