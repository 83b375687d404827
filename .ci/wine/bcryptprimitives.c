/* A test-only stand-in for bcryptprimitives.dll, which Wine 8.0 (Debian 12) lacks:
 * Rust's std imports ProcessPrng from it since Rust 1.78, so no Rust .exe starts
 * under that Wine without it. ProcessPrng fills a buffer with random bytes; here it
 * asks advapi32's RtlGenRandom (exported as SystemFunction036), which Wine has.
 * Built by .ci/run with mingw-w64 and put beside the test executables. Never shipped. */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

__declspec(dllimport) BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x7fffffffu ? 0x7fffffffu : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE instance, DWORD reason, LPVOID reserved)
{
    (void)instance;
    (void)reason;
    (void)reserved;
    return TRUE;
}
