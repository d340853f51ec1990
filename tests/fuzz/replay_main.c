/* Without libFuzzer (gcc builds) each fuzz target still runs: this driver feeds it every
 * file of the directories or files named on the command line, so the corpus and the
 * crash reproducers stay regression tests in every build. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 1;
}

static int replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0; /* counted as nothing: main fails when no path held an input */
    if (!S_ISDIR(st.st_mode))
        return replay_file(path);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        int r = replay_path(child);
        if (r < 0) {
            closedir(d);
            return -1;
        }
        count += r;
    }
    closedir(d);
    return count;
}

int main(int argc, char **argv)
{
    int total = 0;
    for (int i = 1; i < argc; i++) {
        int r = replay_path(argv[i]);
        if (r < 0)
            return 1;
        total += r;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
    printf("replayed %d inputs\n", total);
    if (total == 0) { /* a corpus the replay cannot find would make this test prove nothing */
        fprintf(stderr, "replay: no input found in the paths given (a misnamed corpus?)\n");
        return 1;
    }
    return 0;
}
