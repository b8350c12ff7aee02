/* The plain small-queue listings of a root of thousands of queues, read and checked in C.
 *
 * A root of 2,000 queues of 50 messages spends more time creating and parsing 100,000 name
 * strings in Python than the kernel spends listing the directories. These two functions
 * list one queue directory (and ddmq's work/), check that every name is the usual kind,
 * and hand back only the few figures the count needs: no string per message.
 *
 * Anything unusual (a foreign name, a temp file, an id twice, a sub-directory, a big
 * listing, a symlink where a directory should be, any error) gives None, and the caller
 * counts that queue the exact way in Python, which says what is unusual. So this module
 * decides only which queues are plain; a property test compares both paths on random roots.
 *
 * Everything read here is untrusted: names are at most NAME_MAX bytes (readdir), every
 * read is bounds-checked against the name's own length, and the listing is capped.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* a listing of more names than this is no small queue: the exact path streams it */
#define MAX_NAMES 100000

typedef struct { const char *p; Py_ssize_t n; } span;

typedef struct {
    char *buf;          /* the names, each NUL-terminated */
    size_t used, cap;
    size_t *at;         /* where each name starts in buf */
    Py_ssize_t count, atcap;
} names_t;

static void names_free(names_t *nm) {
    free(nm->buf);
    free(nm->at);
    memset(nm, 0, sizeof(*nm));
}

/* one name into the arena; -1 when the listing is too long or memory runs out */
static int add_name(names_t *nm, const char *name, size_t len) {
    if (nm->count >= MAX_NAMES) return -1;
    if (nm->used + len + 1 > nm->cap) {
        size_t cap = nm->cap ? nm->cap * 2 : 8192;
        while (cap < nm->used + len + 1) cap *= 2;
        char *b = realloc(nm->buf, cap);
        if (b == NULL) return -1;
        nm->buf = b;
        nm->cap = cap;
    }
    if (nm->count >= nm->atcap) {
        Py_ssize_t cap = nm->atcap ? nm->atcap * 2 : 256;
        size_t *a = realloc(nm->at, (size_t)cap * sizeof(size_t));
        if (a == NULL) return -1;
        nm->at = a;
        nm->atcap = cap;
    }
    memcpy(nm->buf + nm->used, name, len);
    nm->buf[nm->used + len] = '\0';
    nm->at[nm->count++] = nm->used;
    nm->used += len + 1;
    return 0;
}

static int is_dot_or_dotdot(const char *name) {
    return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

#ifdef __linux__
#include <sys/syscall.h>

/* the kernel's record (getdents64 is not in every libc's headers) */
struct dirent64_rec {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* every name of the directory open at fd but . and ..; closes fd. 0, or -1 (error, too many).
 * getdents64 itself: readdir() would also fstat and fcntl the descriptor (fdopendir), two
 * system calls per directory that a root of thousands of queues pays thousands of times. */
static int read_names(int fd, names_t *nm) {
    union { char bytes[32768]; unsigned long long align; } u;  /* records are 8-byte aligned */
    char *buf = u.bytes;
    int rc = 0;
    for (;;) {
        long got = syscall(SYS_getdents64, fd, buf, sizeof(u.bytes));
        if (got < 0) { rc = -1; break; }
        if (got == 0) break;
        for (long off = 0; off < got;) {
            struct dirent64_rec *e = (struct dirent64_rec *)(buf + off);
            if (e->d_reclen == 0 || off + e->d_reclen > got) { rc = -1; break; }
            off += e->d_reclen;
            if (is_dot_or_dotdot(e->d_name)) continue;
            size_t room = (size_t)e->d_reclen - offsetof(struct dirent64_rec, d_name);
            if (add_name(nm, e->d_name, strnlen(e->d_name, room)) != 0) { rc = -1; break; }
        }
        if (rc) break;
    }
    close(fd);
    return rc;
}
#else
static int read_names(int fd, names_t *nm) {
    DIR *dir = fdopendir(fd);
    if (dir == NULL) {
        close(fd);
        return -1;
    }
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(dir);
        if (e == NULL) {
            if (errno != 0) rc = -1;
            break;
        }
        if (is_dot_or_dotdot(e->d_name)) continue;
        if (add_name(nm, e->d_name, strlen(e->d_name)) != 0) { rc = -1; break; }
    }
    closedir(dir);
    return rc;
}
#endif

static inline const char *name_at(const names_t *nm, Py_ssize_t i) { return nm->buf + nm->at[i]; }

/* the directory ``rel`` (relative to dir_fd, or a path when dir_fd is AT_FDCWD) opened without
 * following a link, if its link count is ``nlink`` and its size at most ``small``; else -1 */
static int open_plain_dir(int dir_fd, const char *rel, nlink_t nlink, long long small) {
    int fd = openat(dir_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_nlink != nlink || (long long)st.st_size > small) {
        close(fd);
        return -1;
    }
    return fd;
}

/* 1 to ``most`` ASCII digits from s[*i], up to the byte ``end`` (or the name's end when end is 0) */
static int digits(const char *s, Py_ssize_t *i, int most, char end, span *out) {
    Py_ssize_t start = *i, j = *i;
    while (s[j] >= '0' && s[j] <= '9') j++;
    if (j == start || j - start > most || s[j] != end) return 0;
    out->p = s + start;
    out->n = j - start;
    *i = end ? j + 1 : j;
    return 1;
}

/* "ddmq" and 1 to ``most`` ASCII letters or digits to the name's end */
static int ddmq_tail(const char *s, Py_ssize_t i, int most, span *uid) {
    if (strncmp(s + i, "ddmq", 4) != 0) return 0;
    i += 4;
    Py_ssize_t start = i;
    while ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) i++;
    if (i == start || i - start > most || s[i] != '\0') return 0;
    uid->p = s + start;
    uid->n = i - start;
    return 1;
}

/* text order of Python str for ASCII: bytes first, then the shorter */
static int span_cmp(const span *a, const span *b) {
    Py_ssize_t n = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->p, b->p, (size_t)n);
    if (c) return c;
    return (a->n > b->n) - (a->n < b->n);
}

static int span_qsort_cmp(const void *a, const void *b) { return span_cmp(a, b); }

/* 1 when no two spans are equal (sorts them) */
static int all_distinct(span *ids, Py_ssize_t n) {
    qsort(ids, (size_t)n, sizeof(span), span_qsort_cmp);
    for (Py_ssize_t i = 1; i < n; i++)
        if (span_cmp(&ids[i - 1], &ids[i]) == 0) return 0;
    return 1;
}

static int is_queue_file(const char *s) {
    return strcmp(s, "ddmq.yaml") == 0 || strcmp(s, "ddmq.yaml.intermediate") == 0 ||
           strcmp(s, "ddmq.yaml.example") == 0 || strcmp(s, "work") == 0;
}

typedef struct { span prio, qn, uid; } waiting_t;
typedef struct { long long deadline; span prio, uid; } held_t;

/* a dict {key: n} counted over spans, consecutive equal spans sharing one key object */
static int tally_add(PyObject *tally, PyObject *key) {
    PyObject *old = PyDict_GetItemWithError(tally, key);
    if (old == NULL && PyErr_Occurred()) return -1;
    PyObject *n = PyLong_FromSsize_t(old ? PyLong_AsSsize_t(old) + 1 : 1);
    if (n == NULL) return -1;
    int rc = PyDict_SetItem(tally, key, n);
    Py_DECREF(n);
    return rc;
}

/* ddmq_plain(qdir, small, max_digits, max_uid, max_deadline_digits, cutoff) ->
 *   None | ({priority: ready}, ready, oldest queue number or None,
 *           {(priority, in flight?): held}, nearest future deadline or None)
 * A held message is in flight while cutoff (int(now)) <= its deadline (ddmq's clean()).
 * The queue directory is listed first, then work/ (a consume in between shows a message in
 * both: an id twice, so None), as the exact path lists them. */
static PyObject *ddmq_plain(PyObject *self, PyObject *args) {
    PyObject *path_obj;
    long long small;
    int max_digits, max_uid, max_deadline;
    long long cutoff;
    if (!PyArg_ParseTuple(args, "O&LiiiL", PyUnicode_FSConverter, &path_obj, &small, &max_digits, &max_uid,
                          &max_deadline, &cutoff))
        return NULL;
    if (max_deadline < 1 || max_deadline > 18) {
        Py_DECREF(path_obj);
        PyErr_SetString(PyExc_ValueError, "max_deadline_digits must be 1 to 18");
        return NULL;
    }
    names_t q = {0}, w = {0};
    waiting_t *wt = NULL;
    held_t *ht = NULL;
    span *ids = NULL;
    PyObject *result = NULL, *tally = NULL, *held = NULL, *oldest = NULL;
    int plain = 0;
    Py_ssize_t nw = 0, nh = 0;
    int seen[4] = {0, 0, 0, 0};

    Py_BEGIN_ALLOW_THREADS
    int qfd = open_plain_dir(AT_FDCWD, PyBytes_AS_STRING(path_obj), 3, small);
    int wfd = qfd >= 0 ? open_plain_dir(qfd, "work", 2, small) : -1;
    /* a queue is ddmq's (check_dir) with a regular ddmq.yaml, links followed as ddmq does */
    struct stat cst;
    if (wfd >= 0 && fstatat(qfd, "ddmq.yaml", &cst, 0) == 0 && S_ISREG(cst.st_mode)) {
        /* both opened first, listed in this order: the queue, then work/ */
        int listed = read_names(qfd, &q);
        qfd = -1;
        if (listed == 0) {
            if (read_names(wfd, &w) == 0) plain = 1;  /* (closes wfd) */
        } else {
            close(wfd);  /* not listed: still open */
        }
        wfd = -1;
    }
    if (qfd >= 0) close(qfd);
    if (wfd >= 0) close(wfd);
    if (plain) {
        wt = malloc(sizeof(waiting_t) * (size_t)(q.count ? q.count : 1));
        ht = malloc(sizeof(held_t) * (size_t)(w.count ? w.count : 1));
        ids = malloc(sizeof(span) * (size_t)(q.count + w.count ? q.count + w.count : 1));
        if (wt == NULL || ht == NULL || ids == NULL) plain = 0;
    }
    for (Py_ssize_t i = 0; plain && i < q.count; i++) {
        const char *s = name_at(&q, i);
        if (is_queue_file(s)) {
            int k = s[0] == 'w' ? 3 : strcmp(s, "ddmq.yaml") == 0 ? 0 : s[10] == 'i' ? 1 : 2;
            if (seen[k]++) plain = 0;  /* a name listed twice */
            continue;
        }
        Py_ssize_t at = 0;
        waiting_t *m = &wt[nw];
        if (!digits(s, &at, max_digits, '.', &m->prio) || !digits(s, &at, max_digits, '.', &m->qn) ||
            !ddmq_tail(s, at, max_uid, &m->uid)) {
            plain = 0;
            break;
        }
        ids[nw++] = m->uid;
    }
    for (Py_ssize_t i = 0; plain && i < w.count; i++) {
        const char *s = name_at(&w, i);
        Py_ssize_t at = 0;
        held_t *h = &ht[nh];
        span qn, dl;
        if (!digits(s, &at, max_deadline, '.', &dl) || !digits(s, &at, max_digits, '.', &h->prio) ||
            !digits(s, &at, max_digits, '.', &qn) || !ddmq_tail(s, at, max_uid, &h->uid)) {
            plain = 0;
            break;
        }
        h->deadline = 0;  /* at most 11 digits (max_deadline, checked below): no overflow */
        for (Py_ssize_t k = 0; k < dl.n; k++) h->deadline = h->deadline * 10 + (dl.p[k] - '0');
        ids[nw + nh++] = h->uid;
    }
    if (plain && !all_distinct(ids, nw + nh)) plain = 0;
    Py_END_ALLOW_THREADS

    if (!plain) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    tally = PyDict_New();
    held = PyDict_New();
    if (tally == NULL || held == NULL) goto done;
    PyObject *key = NULL;
    span last = {NULL, 0}, least = {NULL, 0};
    for (Py_ssize_t i = 0; i < nw; i++) {
        if (key == NULL || span_cmp(&last, &wt[i].prio) != 0) {
            Py_XDECREF(key);
            key = PyUnicode_DecodeASCII(wt[i].prio.p, wt[i].prio.n, NULL);
            if (key == NULL) goto done;
            last = wt[i].prio;
        }
        if (tally_add(tally, key) < 0) {
            Py_DECREF(key);
            goto done;
        }
        /* the oldest time-based queue number: 10 digits of seconds and more (shorter ones are
         * no times), the least in text order */
        if (wt[i].qn.n >= 10 && (least.p == NULL || span_cmp(&wt[i].qn, &least) < 0)) least = wt[i].qn;
    }
    Py_XDECREF(key);
    oldest = least.p ? PyUnicode_DecodeASCII(least.p, least.n, NULL) : Py_NewRef(Py_None);
    if (oldest == NULL) goto done;
    int have_nearest = 0;
    long long nearest = 0;
    for (Py_ssize_t i = 0; i < nh; i++) {
        int alive = cutoff <= ht[i].deadline;
        if (alive && (!have_nearest || ht[i].deadline < nearest)) {
            nearest = ht[i].deadline;
            have_nearest = 1;
        }
        PyObject *k = Py_BuildValue("(s#O)", ht[i].prio.p, ht[i].prio.n, alive ? Py_True : Py_False);
        if (k == NULL || tally_add(held, k) < 0) {
            Py_XDECREF(k);
            goto done;
        }
        Py_DECREF(k);
    }
    PyObject *near = have_nearest ? PyFloat_FromDouble((double)nearest) : Py_NewRef(Py_None);
    if (near == NULL) goto done;
    result = Py_BuildValue("(OnOON)", tally, nw, oldest, held, near);
done:
    Py_XDECREF(tally);
    Py_XDECREF(held);
    Py_XDECREF(oldest);
    free(wt);
    free(ht);
    free(ids);
    names_free(&q);
    names_free(&w);
    Py_DECREF(path_obj);
    return result;
}

/* w ASCII digits at s, no leading zero unless w is 1 (vsqs names are str(int(...))) */
static int canonical(const char *s, Py_ssize_t w) {
    if (w > 1 && s[0] == '0') return 0;
    for (Py_ssize_t i = 0; i < w; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* vsqs_plain(qdir, small, max_digits) ->
 *   None | (ready, least ready id or None, writing, [deadline, ...], id width)
 * Plain: no sub-directory, every name a ready id, ``id.new`` or ``id.deadline``, every
 * number canonical and of one width, at least one ready id (or no name at all: width 0),
 * no id twice. */
static PyObject *vsqs_plain(PyObject *self, PyObject *args) {
    PyObject *path_obj;
    long long small;
    int max_digits;
    if (!PyArg_ParseTuple(args, "O&Li", PyUnicode_FSConverter, &path_obj, &small, &max_digits)) return NULL;
    names_t q = {0};
    span *ids = NULL, *dls = NULL;
    PyObject *result = NULL, *held = NULL, *least_obj = NULL;
    int plain = 0;
    Py_ssize_t width = 0, n_ready = 0, n_new = 0, n_held = 0;
    span least = {NULL, 0};

    Py_BEGIN_ALLOW_THREADS
    int fd = open_plain_dir(AT_FDCWD, PyBytes_AS_STRING(path_obj), 2, small);
    if (fd >= 0 && read_names(fd, &q) == 0) plain = 1;
    if (plain && q.count) {
        ids = malloc(sizeof(span) * (size_t)q.count);
        dls = malloc(sizeof(span) * (size_t)q.count);
        if (ids == NULL || dls == NULL) plain = 0;
        /* the width: the shortest name, which must be a ready id */
        Py_ssize_t shortest = -1;
        for (Py_ssize_t i = 0; plain && i < q.count; i++) {
            Py_ssize_t len = (Py_ssize_t)strlen(name_at(&q, i));
            if (shortest < 0 || len < shortest) shortest = len;
        }
        width = shortest;
        if (width < 1 || width > max_digits) plain = 0;
    }
    for (Py_ssize_t i = 0; plain && i < q.count; i++) {
        const char *s = name_at(&q, i);
        Py_ssize_t len = (Py_ssize_t)strlen(s);
        if (!canonical(s, width)) {
            plain = 0;
        } else if (len == width) {
            span id = {s, width};
            ids[n_ready + n_new + n_held] = id;
            n_ready++;
            if (least.p == NULL || span_cmp(&id, &least) < 0) least = id;
        } else if (len == width + 4 && strcmp(s + width, ".new") == 0) {
            ids[n_ready + n_new + n_held] = (span){s, width};
            n_new++;
        } else if (len == 2 * width + 1 && s[width] == '.' && canonical(s + width + 1, width)) {
            ids[n_ready + n_new + n_held] = (span){s, width};
            dls[n_held++] = (span){s + width + 1, width};
        } else {
            plain = 0;
        }
    }
    if (plain && q.count && (n_ready == 0 || !all_distinct(ids, q.count))) plain = 0;
    Py_END_ALLOW_THREADS

    if (!plain) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    held = PyList_New(n_held);
    if (held == NULL) goto done;
    for (Py_ssize_t i = 0; i < n_held; i++) {
        PyObject *d = PyUnicode_DecodeASCII(dls[i].p, dls[i].n, NULL);
        if (d == NULL) goto done;
        PyList_SET_ITEM(held, i, d);
    }
    least_obj = least.p ? PyUnicode_DecodeASCII(least.p, least.n, NULL) : Py_NewRef(Py_None);
    if (least_obj == NULL) goto done;
    result = Py_BuildValue("(nOnOn)", n_ready, least_obj, n_new, held, width);
done:
    Py_XDECREF(held);
    Py_XDECREF(least_obj);
    free(ids);
    free(dls);
    names_free(&q);
    Py_DECREF(path_obj);
    return result;
}

#ifdef __linux__
/* One getdents64 chunk of a root's listing, looked into with the GIL released: the console
 * lists a root in a thread worker, and a lookup on a stalled file system (an NFS server gone)
 * must stall that thread only, not every thread (the event loop: keys, redraws, quitting).
 * Python objects are made afterwards, holding the GIL, from ``picks``. */
typedef struct { unsigned short off, len; unsigned char kind; } pick_t;
/* a record is at least 24 bytes (19 of header, a name of 1 and its NUL, aligned to 8) */
#define CHUNK_BYTES 32768
#define MAX_PICKS (CHUNK_BYTES / 24 + 1)
enum { PICK_SKIP = 0, PICK_QUEUE, PICK_OTHER, PICK_DIR, PICK_WITH_CONFIG };

typedef struct {
    union { char bytes[CHUNK_BYTES]; unsigned long long align; } u;
    pick_t picks[MAX_PICKS];
    Py_ssize_t n;
} chunk_t;

/* ddmq_queue_dirs' look at one entry: a queue, an entry to judge, or nothing */
static unsigned char judge_ddmq(int fd, const char *name, size_t len, unsigned char type) {
    if (type != DT_DIR && type != DT_LNK && type != DT_UNKNOWN) return PICK_SKIP;  /* a file: no queue */
    if (type == DT_DIR && len <= 255) {
        char rel[300];
        struct stat st;
        memcpy(rel, name, len);
        memcpy(rel + len, "/ddmq.yaml", sizeof("/ddmq.yaml"));
        int ok = fstatat(fd, rel, &st, 0) == 0 && S_ISREG(st.st_mode);
        memcpy(rel + len, "/work", sizeof("/work"));
        if (ok && fstatat(fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)) return PICK_QUEUE;
    }
    return PICK_OTHER;
}

/* config_dirs' look at one entry: a sub-directory (not a link to one), holding config or not */
static unsigned char judge_config(int fd, const char *name, size_t len, unsigned char type, const char *config,
                                  size_t config_len) {
    if (len > 255) return PICK_SKIP;
    int is_dir = type == DT_DIR;
    if (type == DT_UNKNOWN) {  /* a file system that does not say: ask (no link followed) */
        struct stat st;
        is_dir = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    }
    if (!is_dir) return PICK_SKIP;
    char rel[340];
    memcpy(rel, name, len);
    rel[len] = '/';
    memcpy(rel + len + 1, config, config_len);
    rel[len + 1 + config_len] = '\0';
    return faccessat(fd, rel, F_OK, AT_EACCESS) == 0 ? PICK_WITH_CONFIG : PICK_DIR;
}

/* the next chunk of the listing at fd, each non-dot entry judged (config NULL: ddmq_queue_dirs'
 * look, else config_dirs'). Call without the GIL. 1: picks made; 0: the end; -1: an error */
static int next_chunk(int fd, chunk_t *c, const char *config, size_t config_len) {
    c->n = 0;
    long got = syscall(SYS_getdents64, fd, c->u.bytes, sizeof(c->u.bytes));
    if (got < 0) return -1;
    if (got == 0) return 0;
    for (long off = 0; off < got;) {
        struct dirent64_rec *e = (struct dirent64_rec *)(c->u.bytes + off);
        if (e->d_reclen == 0 || off + e->d_reclen > got || c->n >= MAX_PICKS) return -1;
        long at = off + (long)offsetof(struct dirent64_rec, d_name);
        off += e->d_reclen;
        const char *name = e->d_name;
        size_t len = strnlen(name, (size_t)e->d_reclen - offsetof(struct dirent64_rec, d_name));
        if (name[0] == '.') continue;  /* (dot entries: hidden, as ls does) */
        unsigned char kind = config ? judge_config(fd, name, len, e->d_type, config, config_len)
                                    : judge_ddmq(fd, name, len, e->d_type);
        if (kind == PICK_SKIP) continue;
        c->picks[c->n++] = (pick_t){(unsigned short)at, (unsigned short)len, kind};
    }
    return 1;
}

/* the listing of root, judged: None on an OS error (the caller's own listing says why), NULL
 * with an exception, else a tuple of two lists: (kinds a, kind b) into the first and the names
 * of kind b also into the second when ``both``, else kind b into the second only */
static PyObject *judged_listing(PyObject *path_obj, const char *config, size_t config_len, unsigned char a,
                                unsigned char b, int both) {
    PyObject *first = PyList_New(0), *second = PyList_New(0), *result = NULL;
    chunk_t *c = NULL;
    int fd = -1, rc = 0;
    if (first == NULL || second == NULL) goto done;
    c = PyMem_RawMalloc(sizeof(chunk_t));
    if (c == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    fd = open(PyBytes_AS_STRING(path_obj), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    Py_END_ALLOW_THREADS
    if (fd < 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        rc = next_chunk(fd, c, config, config_len);
        Py_END_ALLOW_THREADS
        if (rc <= 0) break;
        for (Py_ssize_t i = 0; i < c->n; i++) {
            pick_t *p = &c->picks[i];
            PyObject *str = PyUnicode_DecodeFSDefaultAndSize(c->u.bytes + p->off, (Py_ssize_t)p->len);
            if (str == NULL) goto done;
            int err = 0;
            if (p->kind == a || (both && p->kind == b)) err = PyList_Append(first, str);
            if (!err && p->kind == b) err = PyList_Append(second, str);
            Py_DECREF(str);
            if (err) goto done;
        }
    }
    result = rc < 0 ? Py_NewRef(Py_None) : PyTuple_Pack(2, first, second);
done:
    if (fd >= 0) close(fd);
    PyMem_RawFree(c);
    Py_XDECREF(first);
    Py_XDECREF(second);
    return result;
}

/* ddmq_queue_dirs(root) -> None | ([queue, ...], [entry to judge, ...])
 * A root's entries, read with their types: a directory with a regular ddmq.yaml (a link
 * followed, as ddmq's check_dir does) and a real work/ directory is a queue; a file is
 * nothing; anything else (a symlink, an unknown type, a directory that is no queue) is left
 * to the caller, which says what it is. Dot entries are skipped (hidden, as ls does). */
static PyObject *ddmq_queue_dirs(PyObject *self, PyObject *args) {
    PyObject *path_obj;
    if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path_obj)) return NULL;
    PyObject *result = judged_listing(path_obj, NULL, 0, PICK_QUEUE, PICK_OTHER, 0);
    Py_DECREF(path_obj);
    return result;
}

/* config_dirs(root, config) -> None | ([sub-directory, ...], [those holding config, ...])
 * Layout detection's look at a root: its non-dot sub-directories (not links to one), in
 * listing order, and which of them hold an entry named config (faccessat, by effective ids,
 * as os.access(..., effective_ids=True)). None on any error: the caller's own listing says why. */
static PyObject *config_dirs(PyObject *self, PyObject *args) {
    PyObject *path_obj;
    const char *config;
    Py_ssize_t config_len;
    if (!PyArg_ParseTuple(args, "O&s#", PyUnicode_FSConverter, &path_obj, &config, &config_len)) return NULL;
    PyObject *result = NULL;
    if (config_len < 1 || config_len > 64 || memchr(config, '/', (size_t)config_len) ||
        memchr(config, '\0', (size_t)config_len)) {
        PyErr_SetString(PyExc_ValueError, "config must be a short file name");
    } else {
        result = judged_listing(path_obj, config, (size_t)config_len, PICK_DIR, PICK_WITH_CONFIG, 1);
    }
    Py_DECREF(path_obj);
    return result;
}
#endif

static PyMethodDef methods[] = {
#ifdef __linux__
    {"ddmq_queue_dirs", ddmq_queue_dirs, METH_VARARGS, "A ddmq root's queues, and the entries to judge."},
    {"config_dirs", config_dirs, METH_VARARGS, "A root's sub-directories, and those holding a config."},
#endif
    {"ddmq_plain", ddmq_plain, METH_VARARGS, "A plain ddmq queue's figures, or None."},
    {"vsqs_plain", vsqs_plain, METH_VARARGS, "A plain VSQS queue's figures, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_plain", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__plain(void) { return PyModule_Create(&module); }
