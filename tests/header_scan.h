/* Reads include/pylopsmpi.h (PLM_HEADER_PATH) with its per-object headers and lists its public
 * functions with their doc comments, so that the tables of tests/ can check that every
 * collective entry point has a row: a new collective function without one fails a test. */
#ifndef PLM_HEADER_SCAN_H
#define PLM_HEADER_SCAN_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline char *hs_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = (char *)calloc((size_t)n + 1, 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = '\0';
    fclose(f);
    return s;
}

/* The top header followed by every per-object header it includes (#include "pylopsmpi/x.h",
 * found beside it): the declarations are in those. NULL if one cannot be read. */
static inline char *hs_read_header(void)
{
    char *top = hs_read_file(PLM_HEADER_PATH);
    if (!top) return NULL;
    size_t dirlen = strlen(PLM_HEADER_PATH);
    while (dirlen > 0 && PLM_HEADER_PATH[dirlen - 1] != '/') dirlen--;
    size_t len = strlen(top);
    char *all = (char *)malloc(len + 1);
    if (!all) { free(top); return NULL; }
    memcpy(all, top, len + 1);
    for (const char *p = strstr(top, "#include \"pylopsmpi/"); p; p = strstr(p + 1, "#include \"pylopsmpi/")) {
        const char *name = p + strlen("#include \"");
        const char *end = strchr(name, '"');
        char path[4096];
        if (!end || dirlen + (size_t)(end - name) >= sizeof path) { free(all); all = NULL; break; }
        memcpy(path, PLM_HEADER_PATH, dirlen);
        memcpy(path + dirlen, name, (size_t)(end - name));
        path[dirlen + (size_t)(end - name)] = '\0';
        char *part = hs_read_file(path);
        char *grown = part ? (char *)realloc(all, len + strlen(part) + 2) : NULL;
        if (!grown) { free(part); free(all); all = NULL; break; }
        all = grown;
        all[len++] = '\n';
        memcpy(all + len, part, strlen(part) + 1);
        len += strlen(part);
        free(part);
    }
    free(top);
    return all;
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

/* Calls f(name, ctx) for every function whose doc comment has the tag \collective{...} or
 * \collectivebroadcast{...} (the tags scripts/gen-api reads; docs/api.md); returns how many. */
static inline int hs_each_collective(const char *text, void (*f)(const char *name, void *ctx), void *ctx)
{
    int n = 0;
    for (const char *p = text ? strstr(text, "PLM_API ") : NULL; p; p = strstr(p + 1, "PLM_API ")) {
        char name[128];
        const char *b, *e;
        if (!hs_decl_name(p, name, sizeof name) || !hs_doc_before(text, p, &b, &e)) continue;
        char doc[16384];
        size_t len = (size_t)(e - b) < sizeof doc - 1 ? (size_t)(e - b) : sizeof doc - 1;
        memcpy(doc, b, len);
        doc[len] = '\0';
        if (!strstr(doc, "\\collective{") && !strstr(doc, "\\collectivebroadcast{")) continue;
        n++;
        f(name, ctx);
    }
    return n;
}

/* A table's rows against the header: every collective function has a row (or is exempt), and
 * every row names a function of the header. rows[i] and exempt[i] are function names; the
 * problems go to stderr, naming `table`. Returns how many, or -1 when the header cannot be
 * read or shows fewer than 18 collective functions (the parser lost them). */
typedef struct {
    const char *const *rows, *const *exempt;
    int nrows, nexempt;
    const char *table;
    int missing;
} hs_table_t;

static inline int hs_listed(const char *const *names, int n, const char *fn)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], fn) == 0) return 1;
    return 0;
}

static inline void hs_expect_row(const char *name, void *ctx)
{
    hs_table_t *t = (hs_table_t *)ctx;
    if (hs_listed(t->rows, t->nrows, name) || hs_listed(t->exempt, t->nexempt, name)) return;
    fprintf(stderr, "%s is tagged collective but has no row in %s\n", name, t->table);
    t->missing++;
}

static inline int hs_check_table(hs_table_t *t)
{
    char *text = hs_read_header();
    if (!text) {
        fprintf(stderr, "cannot read the header\n");
        return -1;
    }
    t->missing = 0;
    const int n = hs_each_collective(text, hs_expect_row, t);
    for (int i = 0; i < t->nrows; i++) {
        char decl[160];
        snprintf(decl, sizeof decl, " %s(", t->rows[i]);
        if (!strstr(text, decl)) {
            fprintf(stderr, "row %s of %s names no function of the header\n", t->rows[i], t->table);
            t->missing++;
        }
    }
    free(text);
    if (n < 18) fprintf(stderr, "found only %d collective functions in the header\n", n);
    return n < 18 ? -1 : t->missing;
}

#endif
