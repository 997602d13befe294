/*
 * digest.c -- an order-independent digest of a text file's lines, so that
 * the benchmark can compare every engine's answer at full scale without
 * sorting it: the number of lines, and the sum and the xor (mod 2^64) of a
 * 64-bit hash of each line (its bytes without the '\n').  Equal multisets
 * of lines give equal digests; a different one gives a different sum but
 * with probability about 2^-64.
 *
 *   digest FILE     ->  {"rows": N, "sum": "16 hex digits", "xor": "16 hex digits"}
 *
 * The hash is 8 bytes a step (a multiply and a rotate), then splitmix64's
 * finaliser over the state and the length; a last line without '\n' counts.
 */
#define _DEFAULT_SOURCE /* madvise */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t line_hash(const uint8_t *p, size_t n)
{
    uint64_t h = 0x243f6a8885a308d3ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h = (h << 29) | (h >> 35);
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, p + i, n - i);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h = (h << 29) | (h >> 35);
    }
    return mix64(h ^ n);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    uint64_t rows = 0, sum = 0, xr = 0;
    size_t size = (size_t)st.st_size;
    if (size) {
        const uint8_t *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        (void)madvise((void *)map, size, MADV_SEQUENTIAL);
        const uint8_t *p = map, *end = map + size;
        while (p < end) {
            const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
            const uint8_t *stop = nl ? nl : end;
            uint64_t h = line_hash(p, (size_t)(stop - p));
            sum += h;
            xr ^= h;
            rows++;
            p = nl ? nl + 1 : end;
        }
    }
    printf("{\"rows\": %llu, \"sum\": \"%016llx\", \"xor\": \"%016llx\"}\n",
           (unsigned long long)rows, (unsigned long long)sum, (unsigned long long)xr);
    return 0;
}
