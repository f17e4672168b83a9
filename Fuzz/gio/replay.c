/* Runs the GIO fuzz target over every file in the directories given (the corpus and crashes/),
 * without libFuzzer: `make test` builds it with AddressSanitizer and runs it. */
#include <stdint.h>
#include <stdio.h>

#include <glib.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
main (int argc, char **argv)
{
  guint replayed = 0;
  for (int i = 1; i < argc; i++)
    {
      GDir *dir = g_dir_open (argv[i], 0, NULL);
      if (dir == NULL)
        continue;
      const gchar *name;
      while ((name = g_dir_read_name (dir)) != NULL)
        {
          g_autofree gchar *path = g_build_filename (argv[i], name, NULL);
          g_autofree gchar *contents = NULL;
          gsize length = 0;
          if (!g_file_get_contents (path, &contents, &length, NULL))
            continue;
          LLVMFuzzerTestOneInput ((const uint8_t *) contents, length);
          replayed++;
        }
      g_dir_close (dir);
    }
  printf ("gio fuzz replay: %u inputs, no crash\n", replayed);
  return replayed > 0 ? 0 : 1;
}
