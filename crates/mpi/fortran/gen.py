#!/usr/bin/env python3
"""Generates Billboard's Fortran 77 binding from our mpi.h, the one source of truth.

    gen.py MPI_H OUTDIR   writes OUTDIR/f77_wrappers.c (every mpi_*/pmpi_* subroutine, four
                          manglings each) and OUTDIR/mpif_gen.c (a C program that prints mpif.h
                          with the values our mpi.h gives, so the two cannot drift apart)

The wrappers follow MPICH's Fortran ABI: every argument by reference, ierror last, the hidden
CHARACTER lengths (size_t, gfortran >= 8) after it; handles are MPI_Fint with the C values (MPICH's
handles are ints), except MPI_File, a pointer in C, converted with MPI_File_f2c/c2f; the status is
the C struct seen as INTEGER(MPI_STATUS_SIZE) (same five words). Functions whose Fortran form
differs in shape (callbacks with Fortran conventions, attribute values as integers, argv arrays,
MPI_Init without argc/argv, functions returning values) are written by hand in f77_special.c and
listed in SPECIAL below.
"""
import re
import sys

# Written by hand in f77_special.c (their Fortran signature is not the C one by reference).
SPECIAL = {
    "MPI_Init", "MPI_Init_thread", "MPI_Wtime", "MPI_Wtick", "MPI_Aint_add", "MPI_Aint_diff",
    "MPI_Pcontrol", "MPI_Comm_spawn", "MPI_Comm_spawn_multiple", "MPI_Info_create_env",
    "MPI_Attr_get", "MPI_Attr_put", "MPI_Comm_get_attr", "MPI_Comm_set_attr",
    "MPI_Type_get_attr", "MPI_Type_set_attr", "MPI_Win_get_attr", "MPI_Win_set_attr",
    "MPI_Keyval_create", "MPI_Comm_create_keyval", "MPI_Type_create_keyval",
    "MPI_Win_create_keyval", "MPI_Grequest_start", "MPI_Register_datarep",
    "MPI_File_create_errhandler",
}

INT_LIKE = {"int", "MPI_Fint", "MPI_Comm", "MPI_Group", "MPI_Datatype", "MPI_Op",
            "MPI_Errhandler", "MPI_Info", "MPI_Win", "MPI_Request", "MPI_Message",
            "MPI_Session"}
WIDE = {"MPI_Aint", "MPI_Offset", "MPI_Count"}
# C parameters named like this are output-string lengths the C side reads (capped to the
# Fortran buffer so C never writes past what we allocated).
VALUE_LEN = {"valuelen"}
INOUT_LEN = {"buflen", "pset_len"}



def wrap(line, width=120):
    """Free-form Fortran lines stay under 132 columns (the two module generators')."""
    out = []
    while len(line) > width:
        cut = line.rfind(",", 0, width) + 1
        out.append(line[:cut] + " &")
        line = "        " + line[cut:].lstrip()
    return "\n".join(out + [line])

def c_functions(header):
    """(return type, name, [params]) of every `int MPI_...(...)` (and MPICH's `MPIX_`)
    prototype in mpi.h."""
    text = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
    out = []
    for m in re.finditer(r"^(int|double|MPI_Aint)\s+(MPIX?_\w+)\s*\(([^;]*?)\)\s*;", text, re.M):
        params = [p.strip() for p in " ".join(m.group(3).split()).split(",")]
        out.append((m.group(1), m.group(2), [] if params == ["void"] else params))
    return out


# MPIX functions MPICH's libmpichfort binds in no form (Grequest's take C callbacks;
# MPIX_Comm_iagree is MPICH 4.1's, beyond the 4.0 ABI), and those it binds in mpi_f08 only,
# under MPI 4.1's names (fortran_name).
MPIX_NONE = ("MPIX_Grequest_", "MPIX_Comm_iagree")
MPIX_F08_ONLY = ("MPIX_Delete_error_",)


def wanted(name):
    """The C functions MPICH's libmpichfort binds in Fortran 77 form."""
    return not (name.endswith("_c") or name.startswith("MPI_T_") or "c2f" in name
                or "f2c" in name or "f08" in name or name.startswith(MPIX_NONE + MPIX_F08_ONLY))


def fortran_name(cname):
    """The name of C function `cname` in MPICH's Fortran bindings: its own, except
    MPIX_Delete_error_*, which MPICH's mpi_f08 calls MPI_Delete_error_*."""
    return "MPI_" + cname[5:] if cname.startswith(MPIX_F08_ONLY) else cname


# Deprecated functions MPI-3 removed from the language bindings (mpi_f08 never had them), and
# large-count forms MPICH 4.0.2's mpi_f08 does not bind.
F08_ABSENT = {"MPI_Address", "MPI_Attr_delete", "MPI_Errhandler_create", "MPI_Errhandler_get",
              "MPI_Errhandler_set", "MPI_Keyval_free", "MPI_Type_extent", "MPI_Type_hindexed",
              "MPI_Type_hvector", "MPI_Type_lb", "MPI_Type_struct", "MPI_Type_ub",
              "MPI_Op_create_c", "MPI_Type_create_resized_c", "MPI_Type_get_extent_c",
              "MPI_Type_get_true_extent_c", "MPI_File_get_type_extent_c"}


def wanted_f08(name):
    """The C functions behind MPICH's mpi_f08 entries: F77's, and the large-count `_c` forms
    (but not of MPI-IO's reads and writes)."""
    return not (name.startswith("MPI_T_") or "c2f" in name or "f2c" in name or "f08" in name
                or name in F08_ABSENT or (name.startswith("MPI_File_") and name.endswith("_c"))
                or name.startswith(MPIX_NONE))


def parse_param(p):
    const = p.startswith("const ")
    p = p[6:] if const else p
    arrays = len(re.findall(r"\[\d*\]", p))
    p = re.sub(r"\[\d*\]", "", p)
    m = re.match(r"^(\w+)\s*(\**)\s*(\w+)$", p)
    if not m:
        raise SystemExit(f"gen.py: cannot parse parameter {p!r}")
    return const, m.group(1), len(m.group(2)) + arrays, m.group(3)


# void * parameters that are TYPE(C_PTR) in mpi_f08, not choice buffers.
F08_NOT_CHOICE = {"baseptr", "buffer_addr"}


def keeps_buffer(cname):
    """Whether MPI may use the buffer after the call returns (so no temporary copy will do)."""
    return bool(re.match(r"MPI_(I[a-z]|File_i|R(put|get|accumulate|get_accumulate)\b|Put|Get\b|"
                         r"Get_accumulate|Accumulate|Fetch_and_op|Compare_and_swap|Buffer_attach|"
                         r"Win_(create|attach)|Free_mem)", cname)
                or "_init" in cname or cname.endswith(("_begin", "_begin_c")))


def sectionable(cname, params):
    """The choice buffers of `cname` followed by their own count and datatype (MPI_Isend's buf,
    count, datatype; both of MPI_Igather's): buffer name -> (count name, datatype name). A
    non-contiguous section there can be described by a derived datatype (bbf08_section);
    buffers that share a datatype (MPI_Iallreduce's) or take counts arrays cannot."""
    parsed = [parse_param(p) for p in params]
    out = {}
    for i, (_, ty, depth, name) in enumerate(parsed[:-2]):
        count, datatype = parsed[i + 1], parsed[i + 2]
        # A buffer right after another shares its datatype (MPI_Ireduce_scatter_block's
        # recvbuf: the datatype describes sendbuf too).
        after_buffer = i > 0 and parsed[i - 1][1] == "void" and parsed[i - 1][2] == 1
        if (ty == "void" and depth == 1 and name not in F08_NOT_CHOICE and not after_buffer
                and count[2] == 0 and count[1] in ("int", "MPI_Count")
                and datatype[2] == 0 and datatype[1] == "MPI_Datatype"):
            out[name] = (count[3], datatype[3])
    return out


def has_buffer_before(pre):
    """Whether wrapper() has declared the staged copies already (at an earlier buffer)."""
    return any(line.startswith("struct bbf08_staged *staged") for line in pre)


def stages(cname, params):
    """Whether a non-contiguous section no section datatype stands for goes to `cname` as a
    packed copy that its request unpacks at completion (bbf08_stage): the calls that keep the
    buffer and return a request, but for partitioned ones (their parts are read and written
    while the request is active)."""
    return (keeps_buffer(cname) and bool(params) and params[-1] == "MPI_Request *request"
            and not cname.startswith(("MPI_Psend_init", "MPI_Precv_init")))


def wrapper(cname, params, f08=False):
    """The C source of one subroutine: F77 (`pmpi_x_` and aliases) or, with f08, the entry
    MPICH's mpi_f08 module calls (`mpi_x_f08_`, `mpi_x_f08ts_` where a choice buffer comes as
    gfortran's array descriptor, `..._large_` for the MPI_Count forms; ierror optional)."""
    fparams, cargs, pre, post, lens = [], [], [], [], []
    has_buffer = False
    names = [parse_param(p)[3] for p in params]
    sections = sectionable(cname, params) if f08 and keeps_buffer(cname) else {}
    staged = f08 and stages(cname, params)
    # The count and datatype parameters of a sectionable buffer: name -> the buffer's name.
    section_args = {arg: buf for buf, args in sections.items() for arg in args}
    for p in params:
        const, ty, depth, name = parse_param(p)
        if name in section_args:
            # A non-contiguous section goes as one element of its section datatype.
            buf = section_args[name]
            fparams.append(f"{'MPI_Count' if ty == 'MPI_Count' else 'MPI_Fint'} *{name}")
            one = "1" if ty != "MPI_Datatype" else f"s_{buf}"
            cargs.append(f"s_{buf} != MPI_DATATYPE_NULL ? {one} : ({ty})*{name}")
            continue
        if depth == 0:
            if ty in INT_LIKE:
                fparams.append(f"MPI_Fint *{name}")
                if name in VALUE_LEN and "value" in names:
                    cargs.append(f"({ty})bbf_min_len(*{name}, value_len)")
                else:
                    cargs.append(f"({ty})*{name}")
            elif ty in WIDE:
                fparams.append(f"{ty} *{name}")
                cargs.append(f"*{name}")
            elif ty == "MPI_File":
                fparams.append(f"MPI_Fint *{name}")
                cargs.append(f"MPI_File_f2c(*{name})")
            else:
                raise SystemExit(f"gen.py: {cname}: no rule for {p!r}")
        elif depth == 1 and ty == "void" and f08 and name not in F08_NOT_CHOICE:
            has_buffer = True
            fparams.append(f"const struct bbf_gfc_desc *{name}")
            # A non-contiguous section goes through a contiguous copy, in and (unless the C
            # buffer is const) back out, where the call is blocking; a call that keeps the
            # buffer past its return (nonblocking, persistent, one-sided, attach) takes it as
            # one element of a datatype laid over the section where the buffer has its own
            # count and datatype; where it returns a request, a section no such datatype fits
            # (a reduction's, a v/w collective's) goes as a packed copy that the request
            # unpacks when it completes (`stages`); other calls refuse it.
            if staged and not has_buffer_before(pre):
                pre.insert(0, "struct bbf08_staged *staged = NULL;")
                post.insert(0, "rc = bbf08_staged_attach(staged, rc, request);")
            if name in sections:
                count, datatype = sections[name]
                pre.append(f"void *c_{name} = bbf08_buffer({name});")
                pre.append(f"MPI_Datatype s_{name} = MPI_DATATYPE_NULL;")
                pre.append(f"if (c_{name} == BBF08_NONCONTIGUOUS) c_{name} = bbf08_section({name}, "
                           f"(MPI_Count)*{count}, (MPI_Datatype)*{datatype}, &s_{name});")
                post.append(f"if (s_{name} != MPI_DATATYPE_NULL) PMPI_Type_free(&s_{name});")
            elif keeps_buffer(cname):
                pre.append(f"void *c_{name} = bbf08_buffer({name});")
            else:
                pre.append(f"struct bbf08_copy t_{name};")
                pre.append(f"void *c_{name} = bbf08_buffer_copy({name}, &t_{name});")
                post.insert(0, f"bbf08_copy_done(&t_{name}, {0 if const else 1});")
            if staged:
                pre.append(f"if (c_{name} == BBF08_NONCONTIGUOUS) c_{name} = bbf08_stage({name}, &staged, "
                           f"{0 if const else 1});")
            cargs.append(f"c_{name}")
        elif depth == 1 and ty == "void":
            fparams.append(f"void *{name}")
            cargs.append(f"bbf_buffer({name})")
        elif depth == 1 and ty == "char":
            fparams.append(f"char *{name}")
            lens.append(f"size_t {name}_len")
            if const or cname in ("MPI_Info_set", "MPI_Info_delete"):
                pre.append(f"char *c_{name} = bbf_string_in({name}, {name}_len);")
                post.append(f"free(c_{name});")
            else:
                extra = " ".join(f"+ (size_t)bbf_nonneg(*{n})" for n in names if n in INOUT_LEN)
                pre.append(f"char *c_{name} = bbf_string_buffer({name}_len {extra});")
                post.append(f"if (rc == MPI_SUCCESS) bbf_string_out(c_{name}, {name}, {name}_len);")
                post.append(f"free(c_{name});")
            cargs.append(f"c_{name}")
        elif depth == 1 and ty == "MPI_Status":
            fparams.append(f"MPI_Fint *{name}")
            if const:
                cargs.append(f"(const MPI_Status *){name}")
            elif name.startswith("array_of"):
                cargs.append(f"bbf{'08' if f08 else ''}_statuses({name})")
            else:
                cargs.append(f"bbf{'08' if f08 else ''}_status({name})")
        elif depth == 2 and ty == "int" and name == "ranges":
            fparams.append(f"MPI_Fint *{name}")  # int ranges[][3]: the same words
            cargs.append(f"(void *){name}")
        elif depth == 1 and ty in INT_LIKE:
            fparams.append(f"MPI_Fint *{name}")
            if "weights" in name:
                cargs.append(f"bbf{'08' if f08 else ''}_weights({name})")
            elif name == "array_of_errcodes":
                cargs.append(f"bbf{'08' if f08 else ''}_errcodes({name})")
            else:
                cargs.append(f"({'const ' if const else ''}{ty} *){name}")
        elif depth == 1 and ty in WIDE:
            fparams.append(f"{ty} *{name}")
            cargs.append(f"({'const ' if const else ''}{ty} *){name}")
        elif depth == 1 and ty == "MPI_File":
            fparams.append(f"MPI_Fint *{name}")
            init = "MPI_FILE_NULL" if cname == "MPI_File_open" else f"MPI_File_f2c(*{name})"
            pre.append(f"MPI_File c_{name} = {init};")
            post.append(f"if (rc == MPI_SUCCESS) *{name} = MPI_File_c2f(c_{name});")
            cargs.append(f"&c_{name}")
        elif depth == 1 and (ty.endswith(("_function", "_function_c", "_fn"))):
            # Same shape in Fortran and C (all by reference): MPI_User_function, errhandlers.
            fparams.append(f"{ty} *{name}")
            cargs.append(name)
        else:
            raise SystemExit(f"gen.py: {cname}: no rule for {p!r}")
    fparams.append("MPI_Fint *ierr")
    fparams += lens
    lower = cname.lower()
    body = ["    " + s for s in pre]
    # Which name a profiling tool sees, as with MPICH: Fortran 77 calls and mpi_f08's with a
    # choice buffer (MPICH's C `_cdesc` code) call the C MPI_ name, so a C tool counts them; the
    # other mpi_f08 entries (MPICH binds them to PMPI_ in Fortran) call PMPI_, unseen by it.
    target = f"P{cname}" if f08 and not has_buffer else cname
    call = f"{target}({', '.join(cargs)})"
    if has_buffer:
        # A section no copy or section datatype could stand for has no C address to give.
        bufs = [c for c in cargs if c.startswith("c_") and f"void *{c} =" in "".join(pre)]
        test = " || ".join(f"{b} == BBF08_NONCONTIGUOUS" for b in bufs)
        call = f"({test}) ? bbf08_noncontiguous(\"{cname}\") : {call}"
    body.append(f"    int rc = {call};")
    body += ["    " + s for s in post]
    if f08:
        body.append("    if (ierr != NULL) *ierr = (MPI_Fint)rc;")
        large = lower.endswith("_c")
        base = fortran_name(cname).lower()
        base = base[:-2] if large else base
        fn = f"{base}_f08{'ts' if has_buffer else ''}{'_large' if large else ''}_"
        out = [f"void {fn}({', '.join(fparams)})", "{"] + body + ["}"]
        # The profiling twin: pmpir_x_f08_ (MPICH's pmpixr_x_f08_ for an MPIX_ function).
        prefix = "mpix_" if base.startswith("mpix_") else "mpi_"
        out.append(f"BBF_ALIAS({fn}, p{prefix[:-1]}r_{base[len(prefix):]}{fn[len(base):]})")
        return "\n".join(out) + "\n"
    body.append("    *ierr = (MPI_Fint)rc;")
    fn = f"p{lower}_"
    out = [f"void {fn}({', '.join(fparams)})", "{"] + body + ["}"]
    out.append(f"BBF_ALIASES({fn}, p{lower}__, p{lower}, P{cname.upper()}, "
               f"{lower}_, {lower}__, {lower}, {cname.upper()})")
    return "\n".join(out) + "\n"


# mpif.h: the Fortran-only names, then every integer constant of mpi.h with its C value.
MPIF_HEAD = """\
!      mpif.h of Billboard's MPI (MPICH 4.0 ABI), made by
!      crates/mpi/fortran/gen.py from mpi.h: do not edit.
!      Fixed and free form alike: no line passes column 72.
       INTEGER MPI_SOURCE, MPI_TAG, MPI_ERROR
       PARAMETER (MPI_SOURCE=3,MPI_TAG=4,MPI_ERROR=5)
       INTEGER MPI_STATUS_SIZE
       PARAMETER (MPI_STATUS_SIZE=%d)
       INTEGER MPI_STATUS_IGNORE(MPI_STATUS_SIZE)
       INTEGER MPI_STATUSES_IGNORE(MPI_STATUS_SIZE,1)
       INTEGER MPI_ERRCODES_IGNORE(1)
       CHARACTER*1 MPI_ARGVS_NULL(1,1)
       CHARACTER*1 MPI_ARGV_NULL(1)
       INTEGER MPI_ADDRESS_KIND, MPI_OFFSET_KIND
       PARAMETER (MPI_ADDRESS_KIND=%d, MPI_OFFSET_KIND=%d)
       INTEGER MPI_COUNT_KIND, MPI_INTEGER_KIND
       PARAMETER (MPI_COUNT_KIND=%d, MPI_INTEGER_KIND=%d)
       LOGICAL MPI_SUBARRAYS_SUPPORTED
       PARAMETER (MPI_SUBARRAYS_SUPPORTED=.FALSE.)
       LOGICAL MPI_ASYNC_PROTECTS_NONBLOCKING
       PARAMETER (MPI_ASYNC_PROTECTS_NONBLOCKING=.FALSE.)
"""
MPIF_TAIL = """\
       INTEGER MPI_BOTTOM, MPI_IN_PLACE, MPI_UNWEIGHTED
       INTEGER MPI_WEIGHTS_EMPTY
       EXTERNAL MPI_DUP_FN, MPI_NULL_DELETE_FN, MPI_NULL_COPY_FN
       EXTERNAL MPI_WTIME, MPI_WTICK
       EXTERNAL PMPI_WTIME, PMPI_WTICK
       EXTERNAL MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN
       EXTERNAL MPI_COMM_NULL_COPY_FN
       EXTERNAL MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN
       EXTERNAL MPI_WIN_NULL_COPY_FN
       EXTERNAL MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN
       EXTERNAL MPI_TYPE_NULL_COPY_FN
       EXTERNAL MPI_CONVERSION_FN_NULL
       REAL*8 MPI_WTIME, MPI_WTICK
       REAL*8 PMPI_WTIME, PMPI_WTICK
!      Sentinels: known by their addresses in MPICH's common blocks.
       COMMON /MPIFCMB5/ MPI_UNWEIGHTED
       COMMON /MPIFCMB9/ MPI_WEIGHTS_EMPTY
       SAVE /MPIFCMB5/
       SAVE /MPIFCMB9/
       COMMON /MPIPRIV1/ MPI_BOTTOM, MPI_IN_PLACE, MPI_STATUS_IGNORE
       COMMON /MPIPRIV2/ MPI_STATUSES_IGNORE, MPI_ERRCODES_IGNORE
       SAVE /MPIPRIV1/,/MPIPRIV2/
       COMMON /MPIPRIVC/ MPI_ARGVS_NULL, MPI_ARGV_NULL
       SAVE   /MPIPRIVC/
"""
# Integer constants of mpi.h that are not Fortran's: C-only spaces, and C's own names for the
# status indices (MPI_F_SOURCE is 0-based; Fortran's MPI_SOURCE is in MPIF_HEAD).
MPIF_SKIP_PREFIX = ("MPI_T_", "MPIX_", "MPI_F_")
# Predefined attribute keyvals: Fortran's is C's + 1 in MPICH (its attribute is the value, not
# a pointer to it); f77_special.c maps them back.
MPIF_FORTRAN_KEYVALS = {"MPI_TAG_UB", "MPI_HOST", "MPI_IO", "MPI_WTIME_IS_GLOBAL",
                        "MPI_UNIVERSE_SIZE", "MPI_LASTUSEDCODE", "MPI_APPNUM", "MPI_WIN_BASE",
                        "MPI_WIN_SIZE", "MPI_WIN_DISP_UNIT", "MPI_WIN_CREATE_FLAVOR",
                        "MPI_WIN_MODEL"}
# Declared INTEGER*8 in MPICH's mpif.h.
MPIF_WIDE = {"MPI_DISPLACEMENT_CURRENT"}


def mpif_names(header):
    text = re.sub(r"/\*.*?\*/", "", header, flags=re.S)
    names = []
    for m in re.finditer(r"^#define\s+(MPI_\w+)[ \t]+(\S.*)$", text, re.M):
        name, value = m.group(1), m.group(2)
        # Pointers, function names and casts to pointer types are not Fortran constants.
        if "*" in value:
            continue
        # A value naming anything but MPI_ constants (MPI_DUP_FN is MPIR_Dup_fn) is not one.
        if re.search(r"\b(?!MPI_)[A-Za-z_][A-Za-z_0-9]*\b", re.sub(r"\b0x[0-9a-fA-F]+|\(MPI_[A-Za-z]+\)", "", value)):
            continue
        names.append(name)
    for block in re.findall(r"enum\s*\w*\s*\{([^}]*)\}", text):
        names += re.findall(r"\b(MPI_[A-Z0-9_]+)\s*=", block)
    return [n for n in dict.fromkeys(names) if not n.startswith(MPIF_SKIP_PREFIX)]


def mpif_program(header):
    """C source that prints mpif.h with the values our mpi.h gives."""
    out = ["/* Generated by crates/mpi/fortran/gen.py: prints mpif.h. */",
           "#include <stdio.h>", "#include <string.h>", '#include "mpi.h"',
           "static void param(const char *name, long long v)", "{",
           '    int wide = 0;']
    for w in sorted(MPIF_WIDE):
        out.append(f'    wide |= strcmp(name, "{w}") == 0;')
    out.append('    if (!wide) v = (int)v; /* hex handles above 2^31 are negative INTEGERs */')
    out += ['    /* Fortran strings carry no NUL: MPI_MAX_* lengths are one less, as MPICH has them. */',
            '    if (strncmp(name, "MPI_MAX_", 8) == 0) v -= 1;',
            '    printf("       %s %s\\n       PARAMETER (%s=%lld)\\n", wide ? "INTEGER*8" : "INTEGER",',
            "           name, name, v);", "}", "int main(void)", "{"]
    head = MPIF_HEAD.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    out.append(f'    printf("{head}", MPI_F_STATUS_SIZE, (int)sizeof(MPI_Aint), (int)sizeof(MPI_Offset), (int)sizeof(MPI_Count), (int)sizeof(MPI_Fint));')
    for n in mpif_names(header):
        plus = " + 1" if n in MPIF_FORTRAN_KEYVALS else ""
        out.append(f'    param("{n}", (long long)({n}){plus});')
    tail = MPIF_TAIL.replace('"', '\\"').replace("\n", "\\n")
    out.append(f'    fputs("{tail}", stdout);')
    out += ["    return 0;", "}"]
    return "\n".join(out) + "\n"


HANDLE_TYPES = {"MPI_Comm", "MPI_Datatype", "MPI_Errhandler", "MPI_File", "MPI_Group",
                "MPI_Info", "MPI_Message", "MPI_Op", "MPI_Request", "MPI_Session", "MPI_Win"}
# MPI 4.0 handles MPICH 4.0.2's mpi_f08 module has no constant for.
NOT_IN_MPICH_F08 = {"MPI_ERRORS_ABORT", "MPI_SESSION_NULL"}


def compile_constants(header):
    """The named handle constants of MPICH's mpi_f08 module as the data it exports them as
    (module mpi_f08_compile_constants), for programs built with that module."""
    cast = dict(re.findall(r"^#define\s+(MPI_\w+)\s+\(\((MPI_[A-Za-z]+)\)", header, re.M))
    alias = dict(re.findall(r"^#define\s+(MPI_\w+)\s+(MPI_[A-Z0-9_]+)\s*$", header, re.M))
    names = [n for n, t in cast.items() if t in HANDLE_TYPES]
    names += [n for n, a in alias.items() if cast.get(a) in HANDLE_TYPES]
    out = ["/* mpi_f08_compile_constants: TYPE(MPI_Comm) & co., one INTEGER each. */"]
    for n in sorted(set(names) - NOT_IN_MPICH_F08):
        out.append(f"const MPI_Fint __mpi_f08_compile_constants_MOD_{n.lower()} = "
                   f"(MPI_Fint)(intptr_t)({n});")
    return "\n".join(out) + "\n"


def main():
    header = open(sys.argv[1]).read()
    outdir = sys.argv[2]
    funcs = [f for f in c_functions(header) if wanted(f[1])]
    with open(f"{outdir}/f77_wrappers.c", "w") as f:
        f.write("/* Generated by crates/mpi/fortran/gen.py from mpi.h: do not edit. */\n")
        f.write('#include "f77_support.h"\n\n')
        n = 0
        for ret, name, params in funcs:
            if name in SPECIAL:
                continue
            if ret != "int":
                raise SystemExit(f"gen.py: {name} returns {ret}: list it in SPECIAL")
            f.write(wrapper(name, params) + "\n")
            n += 1
    with open(f"{outdir}/f08_wrappers.c", "w") as f:
        f.write("/* Generated by crates/mpi/fortran/gen.py from mpi.h: do not edit. */\n")
        f.write('#include <stdint.h>\n#include "f08_support.h"\n\n')
        for ret, name, params in c_functions(header):
            if wanted_f08(name) and name not in SPECIAL and name.removesuffix("_c") not in SPECIAL:
                f.write(wrapper(name, params, f08=True) + "\n")
        f.write(compile_constants(header))
    with open(f"{outdir}/f77_names.txt", "w") as f:
        for _, name, _ in funcs:
            f.write(name.lower() + "\n")
    with open(f"{outdir}/mpif_gen.c", "w") as f:
        f.write(mpif_program(header))
    print(f"gen.py: {n} generated wrappers, {len(SPECIAL)} written by hand", file=sys.stderr)


if __name__ == "__main__":
    main()
