// The same consumer compiled as C++: the installed header must work from C++ too.
#include "consumer.c"
