/* Reads include/pylopsmpi.h (PLM_HEADER_PATH) and lists its public functions with their doc
 * comments, so that the tables of tests/ can check that every collective entry point has a
 * row: a new collective function without one fails a test. */
#ifndef PLM_HEADER_SCAN_H
#define PLM_HEADER_SCAN_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline char *hs_read_header(void)
{
    FILE *f = fopen(PLM_HEADER_PATH, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = (char *)calloc((size_t)n + 1, 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = '\0';
    fclose(f);
    return s;
}

/* Name of the function declared at p ("PLM_API ... plm_x(") into name; 0 if none. */
static inline int hs_decl_name(const char *p, char *name, size_t len)
{
    const char *paren = strchr(p, '(');
    const char *semi = strchr(p, ';');
    if (!paren || (semi && semi < paren)) return 0;
    const char *e = paren;
    while (e > p && e[-1] == ' ') e--;
    const char *b = e;
    while (b > p && (isalnum((unsigned char)b[-1]) || b[-1] == '_')) b--;
    if ((size_t)(e - b) >= len || strncmp(b, "plm_", 4) != 0) return 0;
    memcpy(name, b, (size_t)(e - b));
    name[e - b] = '\0';
    return 1;
}

/* The doc comment right before p ("/ ** ... * /" then only white space), or 0. */
static inline int hs_doc_before(const char *text, const char *p, const char **b, const char **e)
{
    const char *q = p;
    while (q > text && isspace((unsigned char)q[-1])) q--;
    if (q - text < 2 || q[-1] != '/' || q[-2] != '*') return 0;
    const char *start = NULL;
    for (const char *s = q - 2; s >= text && !start; s--)
        if (s[0] == '/' && s[1] == '*' && s[2] == '*') start = s;
    if (!start) return 0;
    if (strstr(start, "*/") != q - 2) return 0; /* "/ **" of an earlier comment: not this one's */
    *b = start;
    *e = q;
    return 1;
}

/* Calls f(name, ctx) for every function whose doc comment says "Collective" (and not "Not
 * collective"); returns how many. */
static inline int hs_each_collective(const char *text, void (*f)(const char *name, void *ctx), void *ctx)
{
    int n = 0;
    for (const char *p = text ? strstr(text, "PLM_API ") : NULL; p; p = strstr(p + 1, "PLM_API ")) {
        char name[128];
        const char *b, *e;
        if (!hs_decl_name(p, name, sizeof name) || !hs_doc_before(text, p, &b, &e)) continue;
        char doc[4096];
        size_t len = (size_t)(e - b) < sizeof doc - 1 ? (size_t)(e - b) : sizeof doc - 1;
        memcpy(doc, b, len);
        doc[len] = '\0';
        if (!strstr(doc, "Collective") || strstr(doc, "Not collective")) continue;
        n++;
        f(name, ctx);
    }
    return n;
}

#endif
