/* The schema migrations embedded from admin/migrations/ (see admin/CMakeLists.txt). */
#ifndef NDD_ADMIN_MIGRATIONS_H
#define NDD_ADMIN_MIGRATIONS_H

#include <stddef.h>

typedef struct admin_migration {
    int version;      /* NNNN of NNNN_name.sql; applied in increasing order */
    const char *name; /* the file name without .sql */
    const char *sql;
} admin_migration_t;

extern const admin_migration_t admin_migrations[];
extern const size_t admin_migrations_count;

#endif
