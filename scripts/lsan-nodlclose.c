/* Preloaded (LD_PRELOAD) by the sanitizer job of scripts/run-tests only: makes dlclose() a no-op
 * so the shared objects Open MPI loads at run time (its mca_* components and PMIx) stay mapped
 * until LeakSanitizer runs at exit. Their stack frames can then be attributed to a library and
 * matched by scripts/lsan.supp, instead of printing as "<unknown module>". It changes nothing
 * else: no allocation is intercepted and nothing of pylopsmpi is ever dlclose()d. */
int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
