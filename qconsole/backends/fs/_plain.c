/* Plain queue listings, read and checked in C, and a root's sub-directories looked into.
 *
 * A root of 2,000 queues of 50 messages spends more time creating and parsing 100,000 name
 * strings in Python than the kernel spends listing the directories (and a queue of a million
 * messages, a million strings). vsqs_plain and ddmq_plain list one queue directory (and ddmq's work/) of
 * any size, check every name is the usual kind as the kernel hands it out, and hand back only
 * the few figures the count needs: no string per message. ddmq_queue_dirs and config_dirs
 * look at a root's sub-directories (ddmq's listing of queues, layout detection).
 *
 * Anything unusual (a foreign name, a temp file, a ddmq id twice, a VSQS id held twice, a
 * sub-directory, more than MAX_IDS ids, a symlink where a directory should be, any error)
 * gives None, and the caller counts that queue the exact way in Python, which says what is
 * unusual. (A VSQS id under two names -- a consume during the listing of a busy queue -- is
 * counted once, by the exact path's rule.) So this module decides only which queues are
 * plain; property tests compare both paths on random roots.
 *
 * Everything read here is untrusted: names are at most NAME_MAX bytes (getdents), every
 * read stops at the name's own NUL, and the ids held are capped (MAX_IDS).
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
#include <time.h>
#include <unistd.h>

#include <stdint.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* at most this many ids in one queue read here (a set of 8-byte keys, 16 MB a million):
 * a bigger queue is counted the exact way, which streams it */
#define MAX_IDS 4194304

typedef struct { const char *p; Py_ssize_t n; } span;

static int is_dot_or_dotdot(const char *name) {
    return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* ------------------------------------------------------------------ ids seen, by hash */
/* ddmq: an id is kept as a 64-bit hash, with a byte of what it was listed as: one listed
 * waiting and then in work/ was consumed while the listing ran (it counts as consumed, as the
 * exact path has it, whose streamed form also goes by 64-bit hashes); one twice among the
 * waiting or in work/ makes the queue unusual (the exact way). VSQS keeps each id's number itself (at most 19 digits: no
 * collision) and a byte of what it was listed as (``kind``), to count an id listed twice once. */
typedef struct { uint64_t *slot; uint8_t *kind; size_t cap, n; } idset;

static uint64_t hash_bytes(const char *p, Py_ssize_t n) {
    uint64_t h = 1469598103934665603ULL;  /* FNV-1a, then a final mix */
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    h ^= h >> 31;
    h *= 0x7fb5d329728ea185ULL;
    h ^= h >> 27;
    return h ? h : 1;  /* 0 marks an empty slot */
}

/* A random key per process, mixed into every slot: whoever writes names into a queue could
 * otherwise pick ids whose slots all fall together (offline, ~7 s of one core for 50,000 of
 * them) and turn each insert into a walk along one run: 1.3 s instead of 0.02 s to read those
 * 50,000, minutes for a million. (Python's own sets are keyed the same way.) */
static uint64_t slot_key;

/* the slot a key (nonzero) starts probing from: splitmix64's finalizer of it, keyed */
static size_t home_slot(uint64_t v, size_t cap) {
    v ^= slot_key;
    v ^= v >> 30;
    v *= 0xbf58476d1ce4e5b9ULL;
    v ^= v >> 27;
    v *= 0x94d049bb133111ebULL;
    v ^= v >> 31;
    return (size_t)v & (cap - 1);
}

/* ``key`` (nonzero) into the set, *at its slot: 1 when added, 0 when there already, -1 when
 * full or out of memory. ``kinds``: a byte per slot goes along (s->kind, 0 for a new key). */
static int idset_put(idset *s, uint64_t key, int kinds, size_t *at) {
    if ((s->n + 1) * 2 > s->cap) {
        if (s->n + 1 > MAX_IDS) return -1;
        size_t cap = s->cap ? s->cap * 2 : 1024;
        uint64_t *slot = calloc(cap, sizeof(uint64_t));
        uint8_t *kind = kinds ? calloc(cap, 1) : NULL;
        if (slot == NULL || (kinds && kind == NULL)) {
            free(slot);
            free(kind);
            return -1;
        }
        for (size_t i = 0; i < s->cap; i++) {
            uint64_t v = s->slot[i];
            if (!v) continue;
            size_t j = home_slot(v, cap);
            while (slot[j]) j = (j + 1) & (cap - 1);
            slot[j] = v;
            if (kinds) kind[j] = s->kind[i];
        }
        free(s->slot);
        free(s->kind);
        s->slot = slot;
        s->kind = kind;
        s->cap = cap;
    }
    size_t j = home_slot(key, s->cap);
    while (s->slot[j]) {
        if (s->slot[j] == key) {
            *at = j;
            return 0;
        }
        j = (j + 1) & (s->cap - 1);
    }
    s->slot[j] = key;
    s->n++;
    *at = j;
    return 1;
}

static void idset_free(idset *s) {
    free(s->slot);
    free(s->kind);
}

/* the kind kept with ``key``, 0 when the key is not there */
static int idset_kind(const idset *s, uint64_t key) {
    if (s->cap == 0) return 0;
    for (size_t j = home_slot(key, s->cap); s->slot[j]; j = (j + 1) & (s->cap - 1))
        if (s->slot[j] == key) return s->kind[j];
    return 0;
}

/* ------------------------------------------------------------------ listing */
/* each_name(fd, fn, ctx): fn(ctx, name) for every name of the directory open at fd but . and
 * .., as the kernel hands them out, until fn returns nonzero. 0 at the end, 1 when fn
 * stopped it, -1 on an error. Names are NUL-terminated (at most NAME_MAX bytes). fd stays open. */
typedef int (*name_fn)(void *ctx, const char *name);

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

/* getdents64 itself: readdir() would also fstat and fcntl the descriptor (fdopendir), two
 * system calls per directory that a root of thousands of queues pays thousands of times */
static int each_name(int fd, name_fn fn, void *ctx) {
    union { char bytes[32768]; unsigned long long align; } u;  /* records are 8-byte aligned */
    for (;;) {
        long got = syscall(SYS_getdents64, fd, u.bytes, sizeof(u.bytes));
        if (got < 0) return -1;
        if (got == 0) return 0;
        for (long off = 0; off < got;) {
            struct dirent64_rec *e = (struct dirent64_rec *)(u.bytes + off);
            if (e->d_reclen == 0 || off + e->d_reclen > got) return -1;
            off += e->d_reclen;
            size_t room = (size_t)e->d_reclen - offsetof(struct dirent64_rec, d_name);
            if (room == 0 || memchr(e->d_name, '\0', room) == NULL) return -1;  /* (never from a kernel) */
            if (is_dot_or_dotdot(e->d_name)) continue;
            if (fn(ctx, e->d_name)) return 1;
        }
    }
}
#else
static int each_name(int fd, name_fn fn, void *ctx) {
    int dup_fd = dup(fd);  /* closedir closes what fdopendir took */
    if (dup_fd < 0) return -1;
    DIR *dir = fdopendir(dup_fd);
    if (dir == NULL) {
        close(dup_fd);
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
        if (fn(ctx, e->d_name)) {
            rc = 1;
            break;
        }
    }
    closedir(dir);
    return rc;
}
#endif

/* the directory ``rel`` (relative to dir_fd, or a path when dir_fd is AT_FDCWD) opened without
 * following a link, if its link count is ``nlink`` and its size at most ``most``; else -1 */
static int open_plain_dir(int dir_fd, const char *rel, nlink_t nlink, long long most) {
    int fd = openat(dir_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_nlink != nlink || (long long)st.st_size > most) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ------------------------------------------------------------------ name parts */
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

/* a short run of digits kept (a priority, a queue number, an id: at most MAX_TEXT bytes) */
#define MAX_TEXT 24
typedef struct { char text[MAX_TEXT]; Py_ssize_t len; } text_t;

static span text_span(const text_t *t) { return (span){t->text, t->len}; }

static void text_set(text_t *t, span s) {
    memcpy(t->text, s.p, (size_t)s.n);
    t->len = s.n;
}

/* ------------------------------------------------------------------ ddmq */
/* a queue with more distinct priorities than this is counted the exact way */
#define MAX_PRIOS 64
/* the least queue numbers kept: the oldest ready message unless all of them were consumed
 * while work/ was listed (then the exact way) */
#define KEEP_LEAST 16
/* an id's kind in the set: 1 + the index of its priority while waiting, this once held */
#define DDMQ_HELD 0xFF

typedef struct { text_t prio; int alive; Py_ssize_t n; } prio_count;

typedef struct {
    int max_digits, max_uid, max_deadline;
    long long cutoff;
    int plain;
    int seen[4];                   /* ddmq's own files, each listed once */
    prio_count ready[MAX_PRIOS];   /* ready messages by priority */
    int n_prios;
    Py_ssize_t n_ready;
    text_t least[KEEP_LEAST];      /* the least time-based queue numbers of ready messages, */
    uint64_t least_id[KEEP_LEAST]; /* ascending, with their ids' hashes (one may be consumed */
    int n_least;                   /* while work/ is listed: the next one is then the oldest) */
    prio_count held[2 * MAX_PRIOS];  /* consumed ones by (priority, in flight?) */
    int n_held_keys;
    long long nearest;             /* the nearest deadline still in flight */
    int have_nearest;
    idset ids;
} ddmq_acc;

static int is_queue_file(const char *s) {
    return strcmp(s, "ddmq.yaml") == 0 || strcmp(s, "ddmq.yaml.intermediate") == 0 ||
           strcmp(s, "ddmq.yaml.example") == 0 || strcmp(s, "work") == 0;
}

/* the count of ``prio`` (with ``alive``) among ``table``'s ``*n`` entries, added when new; NULL when full */
static prio_count *prio_slot(prio_count *table, int *n, int most, span prio, int alive) {
    for (int i = 0; i < *n; i++) {
        span have = text_span(&table[i].prio);
        if (table[i].alive == alive && span_cmp(&have, &prio) == 0) return &table[i];
    }
    if (*n >= most) return NULL;
    prio_count *slot = &table[(*n)++];
    text_set(&slot->prio, prio);
    slot->alive = alive;
    slot->n = 0;
    return slot;
}

/* one name of the queue directory; nonzero stops the listing (the queue is not plain) */
static int ddmq_waiting(void *ctx, const char *s) {
    ddmq_acc *a = ctx;
    if (is_queue_file(s)) {
        int k = s[0] == 'w' ? 3 : strcmp(s, "ddmq.yaml") == 0 ? 0 : s[10] == 'i' ? 1 : 2;
        if (a->seen[k]++) a->plain = 0;  /* a name listed twice */
        return !a->plain;
    }
    Py_ssize_t at = 0;
    span prio, qn, uid;
    prio_count *slot;
    size_t where;
    uint64_t id = 0;
    if (!digits(s, &at, a->max_digits, '.', &prio) || !digits(s, &at, a->max_digits, '.', &qn) ||
        !ddmq_tail(s, at, a->max_uid, &uid) ||
        (slot = prio_slot(a->ready, &a->n_prios, MAX_PRIOS, prio, 1)) == NULL ||
        idset_put(&a->ids, (id = hash_bytes(uid.p, uid.n)), 1, &where) != 1) {
        a->plain = 0;  /* (an id twice among the waiting: two files, which the exact ways count apart) */
        return 1;
    }
    a->ids.kind[where] = (uint8_t)(1 + (slot - a->ready));
    slot->n++;
    a->n_ready++;
    /* the oldest time-based queue number: 10 digits of seconds and more (shorter ones are no
     * times), the least in text order; the KEEP_LEAST least are kept */
    if (qn.n >= 10) {
        int i = a->n_least;
        span last = i ? text_span(&a->least[i - 1]) : qn;
        if (i < KEEP_LEAST || span_cmp(&qn, &last) < 0) {
            if (i == KEEP_LEAST) i--;  /* the greatest kept makes room */
            while (i > 0) {
                span before = text_span(&a->least[i - 1]);
                if (span_cmp(&before, &qn) <= 0) break;
                a->least[i] = a->least[i - 1];
                a->least_id[i] = a->least_id[i - 1];
                i--;
            }
            text_set(&a->least[i], qn);
            a->least_id[i] = id;
            if (a->n_least < KEEP_LEAST) a->n_least++;
        }
    }
    return 0;
}

/* one name of work/ */
static int ddmq_work(void *ctx, const char *s) {
    ddmq_acc *a = ctx;
    Py_ssize_t at = 0;
    span dl, prio, qn, uid;
    size_t where;
    int added;
    if (!digits(s, &at, a->max_deadline, '.', &dl) || !digits(s, &at, a->max_digits, '.', &prio) ||
        !digits(s, &at, a->max_digits, '.', &qn) || !ddmq_tail(s, at, a->max_uid, &uid) ||
        (added = idset_put(&a->ids, hash_bytes(uid.p, uid.n), 1, &where)) < 0 ||
        (!added && a->ids.kind[where] == DDMQ_HELD)) {
        a->plain = 0;  /* (an id twice in work/) */
        return 1;
    }
    if (!added) {
        /* consumed while the listing ran: listed waiting, then in work/. The consumed copy
         * counts, as the exact path has it, and the waiting one no more */
        a->ready[a->ids.kind[where] - 1].n--;
        a->n_ready--;
    }
    a->ids.kind[where] = DDMQ_HELD;
    long long deadline = 0;  /* at most max_deadline (<= 18) digits: no overflow */
    for (Py_ssize_t k = 0; k < dl.n; k++) deadline = deadline * 10 + (dl.p[k] - '0');
    int alive = a->cutoff <= deadline;  /* ddmq's clean(): expired when int(deadline) < int(now) */
    prio_count *slot = prio_slot(a->held, &a->n_held_keys, 2 * MAX_PRIOS, prio, alive);
    if (slot == NULL) {
        a->plain = 0;
        return 1;
    }
    slot->n++;
    if (alive && (!a->have_nearest || deadline < a->nearest)) {
        a->nearest = deadline;
        a->have_nearest = 1;
    }
    return 0;
}

/* ddmq_plain(qdir, max_size, max_digits, max_uid, max_deadline_digits, cutoff) ->
 *   None | ({priority: ready}, ready, oldest queue number or None,
 *           {(priority, in flight?): held}, nearest future deadline or None)
 * A held message is in flight while cutoff (int(now)) <= its deadline (ddmq's clean()).
 * The queue directory is listed first, then work/, as the exact path lists them: a message
 * consumed in between is listed in both and counts as consumed, as there. Parsed as the
 * kernel hands the names out: a queue of a million messages is read in a few tens of MB. */
static PyObject *ddmq_plain(PyObject *self, PyObject *args) {
    PyObject *path_obj;
    long long most;
    int max_digits, max_uid, max_deadline;
    long long cutoff;
    if (!PyArg_ParseTuple(args, "O&LiiiL", PyUnicode_FSConverter, &path_obj, &most, &max_digits, &max_uid,
                          &max_deadline, &cutoff))
        return NULL;
    if (max_deadline < 1 || max_deadline > 18 || max_digits < 1 || max_digits >= MAX_TEXT || max_uid < 1) {
        Py_DECREF(path_obj);
        PyErr_SetString(PyExc_ValueError, "max_deadline_digits must be 1 to 18, max_digits 1 to 23");
        return NULL;
    }
    ddmq_acc *a = calloc(1, sizeof(ddmq_acc));
    if (a == NULL) {
        Py_DECREF(path_obj);
        return PyErr_NoMemory();
    }
    a->max_digits = max_digits;
    a->max_uid = max_uid;
    a->max_deadline = max_deadline;
    a->cutoff = cutoff;
    PyObject *result = NULL, *tally = NULL, *held = NULL, *oldest = NULL;

    Py_BEGIN_ALLOW_THREADS
    int qfd = open_plain_dir(AT_FDCWD, PyBytes_AS_STRING(path_obj), 3, most);
    int wfd = qfd >= 0 ? open_plain_dir(qfd, "work", 2, most) : -1;
    /* a queue is ddmq's (check_dir) with a regular ddmq.yaml, links followed as ddmq does */
    struct stat cst;
    if (wfd >= 0 && fstatat(qfd, "ddmq.yaml", &cst, 0) == 0 && S_ISREG(cst.st_mode)) {
        /* both opened first, listed in this order: the queue, then work/ */
        a->plain = 1;
        if (each_name(qfd, ddmq_waiting, a) != 0 || !a->plain || each_name(wfd, ddmq_work, a) != 0) a->plain = 0;
    }
    if (qfd >= 0) close(qfd);
    if (wfd >= 0) close(wfd);
    Py_END_ALLOW_THREADS

    if (!a->plain) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    tally = PyDict_New();
    held = PyDict_New();
    if (tally == NULL || held == NULL) goto done;
    /* the oldest: the least kept queue number whose message was not consumed meanwhile */
    int oldest_at = -1;
    for (int i = 0; i < a->n_least && oldest_at < 0; i++)
        if (idset_kind(&a->ids, a->least_id[i]) != DDMQ_HELD) oldest_at = i;
    if (oldest_at < 0 && a->n_least == KEEP_LEAST) {  /* all kept ones consumed: the exact way */
        result = Py_NewRef(Py_None);
        goto done;
    }
    for (int i = 0; i < a->n_prios; i++) {
        if (a->ready[i].n == 0) continue;  /* every one consumed meanwhile: no ready count at all */
        PyObject *key = PyUnicode_DecodeASCII(a->ready[i].prio.text, a->ready[i].prio.len, NULL);
        PyObject *n = key ? PyLong_FromSsize_t(a->ready[i].n) : NULL;
        int rc = n ? PyDict_SetItem(tally, key, n) : -1;
        Py_XDECREF(key);
        Py_XDECREF(n);
        if (rc < 0) goto done;
    }
    for (int i = 0; i < a->n_held_keys; i++) {
        PyObject *key = Py_BuildValue("(s#O)", a->held[i].prio.text, a->held[i].prio.len,
                                      a->held[i].alive ? Py_True : Py_False);
        PyObject *n = key ? PyLong_FromSsize_t(a->held[i].n) : NULL;
        int rc = n ? PyDict_SetItem(held, key, n) : -1;
        Py_XDECREF(key);
        Py_XDECREF(n);
        if (rc < 0) goto done;
    }
    oldest = oldest_at >= 0 ? PyUnicode_DecodeASCII(a->least[oldest_at].text, a->least[oldest_at].len, NULL)
                            : Py_NewRef(Py_None);
    if (oldest == NULL) goto done;
    PyObject *near = a->have_nearest ? PyFloat_FromDouble((double)a->nearest) : Py_NewRef(Py_None);
    if (near == NULL) goto done;
    result = Py_BuildValue("(OnOON)", tally, a->n_ready, oldest, held, near);
done:
    Py_XDECREF(tally);
    Py_XDECREF(held);
    Py_XDECREF(oldest);
    idset_free(&a->ids);
    free(a);
    Py_DECREF(path_obj);
    return result;
}

/* ------------------------------------------------------------------ VSQS */
/* w ASCII digits at s, no leading zero unless w is 1 (vsqs names are str(int(...))) */
static int canonical(const char *s, Py_ssize_t w) {
    if (w > 1 && s[0] == '0') return 0;
    for (Py_ssize_t i = 0; i < w; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* the divisor of a vsqs number of w digits into seconds (timeunits.vsqs_divisor) */
static double vsqs_divisor(Py_ssize_t w) {
    return w >= 18 ? 1e9 : w >= 15 ? 1e6 : w >= 12 ? 1e3 : 1.0;
}

/* what a VSQS id was listed as; listed twice, it counts as the greater (the exact path's rule) */
enum { KIND_WRITING = 1, KIND_READY = 2, KIND_HELD = 3 };
/* the least ready ids kept: the least one not consumed meanwhile is the oldest */
#define KEEP_LEAST 16

typedef struct {
    int max_digits;
    double now;
    int plain;
    Py_ssize_t width;              /* of every id and deadline: the first name's */
    unsigned long long cutoff;     /* a deadline at most this has expired (vsqs: deadline <= now) */
    int none_expired;              /* int(now * divisor) < 0 (a clock before 1970): no deadline has */
    Py_ssize_t n_ready, n_new, n_inflight, n_expired;
    unsigned long long least[KEEP_LEAST];  /* the least ready ids, ascending (one may be held later) */
    int n_least;
    unsigned long long nearest;    /* the nearest deadline in flight */
    int have_nearest;
    idset ids;                     /* every id (its number + 1), with its kind */
} vsqs_acc;

/* ``id`` among the KEEP_LEAST least ready ids, if it is one of them */
static void keep_least(vsqs_acc *a, unsigned long long id) {
    int n = a->n_least;
    if (n == KEEP_LEAST && id >= a->least[n - 1]) return;
    int i = n < KEEP_LEAST ? n : n - 1;  /* (full: the largest drops out) */
    while (i > 0 && a->least[i - 1] > id) {
        a->least[i] = a->least[i - 1];
        i--;
    }
    a->least[i] = id;
    if (n < KEEP_LEAST) a->n_least++;
}

/* one name; nonzero stops the listing (the queue is not plain) */
static int vsqs_name(void *ctx, const char *s) {
    vsqs_acc *a = ctx;
    Py_ssize_t run = 0;
    while (s[run] >= '0' && s[run] <= '9') run++;
    if (a->width == 0) {  /* the first name sets the width, and with it the clock's unit */
        /* (19 digits at most: a deadline is then a 64-bit number) */
        if (run < 1 || run > a->max_digits || run > 19) {
            a->plain = 0;
            return 1;
        }
        a->width = run;
        double units = a->now * vsqs_divisor(run);  /* as Python's int(now * divisor) */
        /* (a double is cast only within unsigned long long's range: past 2^64, every deadline of
         * at most 19 digits is at most int(units); below -1, int(units) < 0 <= every deadline) */
        a->none_expired = !(units > -1.0);
        a->cutoff = units >= 18446744073709551616.0 ? ~0ULL : units > 0 ? (unsigned long long)units : 0;
    }
    Py_ssize_t w = a->width;
    if (run != w || !canonical(s, w)) {
        a->plain = 0;
        return 1;
    }
    unsigned long long id = 0, deadline = 0;  /* (at most 19 digits: below 2^64 - 1) */
    for (Py_ssize_t k = 0; k < w; k++) id = id * 10 + (unsigned long long)(s[k] - '0');
    int kind;
    if (s[w] == '\0') {
        kind = KIND_READY;
    } else if (strcmp(s + w, ".new") == 0) {
        kind = KIND_WRITING;
    } else if (s[w] == '.' && canonical(s + w + 1, w) && s[2 * w + 1] == '\0') {
        /* (canonical stops at the name's NUL: no byte past it is read) */
        kind = KIND_HELD;
        for (Py_ssize_t k = w + 1; k < 2 * w + 1; k++) deadline = deadline * 10 + (unsigned long long)(s[k] - '0');
    } else {
        a->plain = 0;
        return 1;
    }
    size_t at;
    int added = idset_put(&a->ids, id + 1, 1, &at);
    if (added < 0) {
        a->plain = 0;
        return 1;
    }
    if (!added) {
        /* An id listed twice: a consume, a requeue or a publish while the listing ran (or one
         * name listed twice). Counted once, as the exact path counts it: held over ready over
         * writing. Held twice (consumed again after a requeue): the exact path keeps the
         * deadline listed last, which this count cannot take back: the exact way. */
        int old = a->ids.kind[at];
        if (kind == KIND_HELD && old == KIND_HELD) {
            a->plain = 0;
            return 1;
        }
        if (kind <= old) return 0;
        if (old == KIND_READY) a->n_ready--;
        else a->n_new--;
    }
    a->ids.kind[at] = (uint8_t)kind;
    if (kind == KIND_READY) {
        keep_least(a, id);
        a->n_ready++;
    } else if (kind == KIND_WRITING) {
        a->n_new++;
    } else {
        if (!a->none_expired && deadline <= a->cutoff) {
            a->n_expired++;
        } else {
            a->n_inflight++;
            if (!a->have_nearest || deadline < a->nearest) {
                a->nearest = deadline;
                a->have_nearest = 1;
            }
        }
    }
    return 0;
}

/* the least ready id at the end of the listing (some kept ones may have been consumed since);
 * 0 when all the kept ones were: the exact way */
static int least_ready(const vsqs_acc *a, unsigned long long *out) {
    for (int i = 0; i < a->n_least; i++) {
        if (idset_kind(&a->ids, a->least[i] + 1) == KIND_READY) {
            *out = a->least[i];
            return 1;
        }
    }
    return 0;
}

/* vsqs_plain(qdir, max_size, max_digits, now) ->
 *   None | (ready, least ready id or None, writing, in flight, expired, nearest deadline in
 *           seconds or None, id width)
 * Plain: no sub-directory, every name a ready id, ``id.new`` or ``id.deadline``, every
 * number canonical and of one width (at most 19 digits), at least one ready id (or no name at
 * all: width 0), no id held twice. An id under two names (a consume, a requeue or a publish
 * while the listing ran: a busy queue) counts once, as held over ready over writing, as the
 * exact path counts it; the least ready id is the least of those not consumed meanwhile. A deadline has expired when it is at most int(now * divisor),
 * each in the unit its width tells (layout.is_expired). */
static PyObject *vsqs_plain(PyObject *self, PyObject *args) {
    PyObject *path_obj;
    long long most;
    int max_digits;
    double now;
    if (!PyArg_ParseTuple(args, "O&Lid", PyUnicode_FSConverter, &path_obj, &most, &max_digits, &now)) return NULL;
    vsqs_acc *a = calloc(1, sizeof(vsqs_acc));
    if (a == NULL) {
        Py_DECREF(path_obj);
        return PyErr_NoMemory();
    }
    a->max_digits = max_digits < MAX_TEXT - 1 ? max_digits : MAX_TEXT - 1;
    a->now = now;
    PyObject *result = NULL, *least = NULL, *nearest = NULL;
    unsigned long long least_id = 0;

    Py_BEGIN_ALLOW_THREADS
    int fd = open_plain_dir(AT_FDCWD, PyBytes_AS_STRING(path_obj), 2, most);
    if (fd >= 0) {
        a->plain = 1;
        if (each_name(fd, vsqs_name, a) != 0) a->plain = 0;
        close(fd);
    }
    if (a->plain && a->width && a->n_ready == 0) a->plain = 0;  /* (the exact path's unit comes from a ready id) */
    if (a->plain && a->width && !least_ready(a, &least_id)) a->plain = 0;
    Py_END_ALLOW_THREADS

    if (!a->plain) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    least = a->width ? PyUnicode_FromFormat("%llu", least_id) : Py_NewRef(Py_None);
    nearest = a->have_nearest ? PyFloat_FromDouble((double)a->nearest / vsqs_divisor(a->width)) : Py_NewRef(Py_None);
    if (least == NULL || nearest == NULL) goto done;
    result = Py_BuildValue("(nOnnnOn)", a->n_ready, least, a->n_new, a->n_inflight, a->n_expired, nearest, a->width);
done:
    Py_XDECREF(least);
    Py_XDECREF(nearest);
    idset_free(&a->ids);
    free(a);
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

PyMODINIT_FUNC PyInit__plain(void) {
    uint64_t key = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &key, sizeof(key)) != (ssize_t)sizeof(key)) key = 0;
        close(fd);
    }
    /* (no /dev/urandom: something that differs between processes and runs) */
    key ^= (uint64_t)(uintptr_t)&key ^ ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
    slot_key = key;
    return PyModule_Create(&module);
}
