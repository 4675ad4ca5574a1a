/* State through notifyd: `state set NAME VALUE` and `state get NAME` (prints the value)
   run as separate processes; `state version` prints notifyd's pid and interface version
   from NOTIFYBUS_SERVER_VERSION_NAME; `state survive NAME GO` keeps a dispatch
   registration and a state across a notifyd restart (it prints "ready", waits for the
   file GO to exist, then expects a post to reach it and the state to be back);
   `state fence NAME REPORT` checks, in three threads at once, that a call that waits never
   overtakes the process's own earlier post, which goes out on another connection
   (Protocol/c-api.md), and that calls waiting at once shared round trips (the counts
   notify_dump_status writes to REPORT). */
#include <notify.h>
#include <notify_private.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static atomic_int fired;
static atomic_int stop_noise;

/* The flood can make the bus refuse a call to notifyd for a moment ("failed", try again). */
static uint32_t get_state_retrying(int token, uint64_t *value) {
  uint32_t status = NOTIFY_STATUS_FAILED;
  for (int tries = 0; tries < 100 && status == NOTIFY_STATUS_FAILED; tries++) {
    status = notify_get_state(token, value);
  }
  return status;
}

/* Posts another name in bursts, so that the posting connection is busy and a post may
   wait in its queue while the calling thread goes on. */
static void *noise(void *name) {
  int token;
  if (notify_register_plain((const char *)name, &token) != NOTIFY_STATUS_OK) return NULL;
  while (!atomic_load(&stop_noise)) {
    for (int i = 0; i < 64; i++) notify_post((const char *)name);
    /* A round trip after each burst bounds what the bus holds for notifyd however slow the
       machine is: an unpaced flood piled up there (hundreds of MiB in dbus-daemon with six
       of these programs at a load of 11) and delayed every call past its time-out. */
    uint64_t value;
    get_state_retrying(token, &value);
  }
  notify_cancel(token);
  return NULL;
}

/* One thread of `state fence`: posts of its own names, each followed by a call that
   waits. The noise thread and the other threads post and wait meanwhile, so that the
   posting connection is busy and another thread's fence may be under way. */
#define FENCE_THREADS 3
struct fence_thread {
  pthread_t thread;
  char name[128];
};

static void *fence_rounds(void *argument) {
  const char *base = ((struct fence_thread *)argument)->name;
  /* A post, then a state call: the post's delivery comes first, as on Darwin. */
  int check, token, result = 0;
  uint64_t value = 0;
  EXPECT_STATUS(notify_register_check(base, &check), NOTIFY_STATUS_OK);
  EXPECT_STATUS(notify_check(check, &result), NOTIFY_STATUS_OK);
  for (int i = 0; i < 200 && harness_failures == 0; i++) {
    EXPECT_STATUS(notify_post(base), NOTIFY_STATUS_OK);
    EXPECT_STATUS(get_state_retrying(check, &value), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_check(check, &result), NOTIFY_STATUS_OK);
    EXPECT(result == 1, "%s round %d: the check after post and get_state is 0", base, i);
  }
  /* A post, then the first registration of its name: the new handler never sees it. */
  dispatch_queue_t queue = dispatch_queue_create("fence", DISPATCH_QUEUE_SERIAL);
  char name[160];
  for (int i = 0; i < 200 && harness_failures == 0; i++) {
    snprintf(name, sizeof name, "%s.%d", base, i);
    EXPECT_STATUS(notify_post(name), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_register_dispatch(name, &token, queue, ^(int t) {
                    (void)t;
                    atomic_fetch_add(&fired, 1);
                  }),
                  NOTIFY_STATUS_OK);
  }
  /* Anything wrongly delivered has arrived once a later round trip is answered. */
  EXPECT_STATUS(get_state_retrying(check, &value), NOTIFY_STATUS_OK);
  harness_sleep_ms(100);
  dispatch_sync(queue, ^{});
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) return 64;
  const char *mode = argv[1];
  int token;
  if (strcmp(mode, "set") == 0 && argc == 4) {
    EXPECT_STATUS(notify_register_check(argv[2], &token), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_set_state(token, strtoull(argv[3], NULL, 10)), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_cancel(token), NOTIFY_STATUS_OK);
    return harness_finish("state set");
  }
  if (strcmp(mode, "get") == 0 && argc == 3) {
    uint64_t value = 0;
    EXPECT_STATUS(notify_register_plain(argv[2], &token), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_get_state(token, &value), NOTIFY_STATUS_OK);
    printf("%llu\n", (unsigned long long)value);
    return harness_finish("state get");
  }
  if (strcmp(mode, "version") == 0) {
    uint64_t value = 0;
    EXPECT_STATUS(notify_register_check(NOTIFYBUS_SERVER_VERSION_NAME, &token), NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_get_state(token, &value), NOTIFY_STATUS_OK);
    /* Only notifyd sets it; the refusal is silent, as every state refusal on Darwin. */
    EXPECT_STATUS(notify_set_state(token, 5), NOTIFY_STATUS_OK);
    uint64_t again = 0;
    EXPECT_STATUS(notify_get_state(token, &again), NOTIFY_STATUS_OK);
    EXPECT(again == value, "the version name changed to %llu", (unsigned long long)again);
    printf("pid %llu version %llu\n", (unsigned long long)(value >> 32),
           (unsigned long long)(value & 0xffffffffu));
    return harness_finish("state version");
  }
  if (strcmp(mode, "survive") == 0 && argc == 4) {
    dispatch_queue_t queue = dispatch_queue_create("survive", DISPATCH_QUEUE_SERIAL);
    EXPECT_STATUS(notify_register_dispatch(argv[2], &token, queue, ^(int t) {
                    (void)t;
                    atomic_fetch_add(&fired, 1);
                  }),
                  NOTIFY_STATUS_OK);
    EXPECT_STATUS(notify_set_state(token, 4242), NOTIFY_STATUS_OK);
    printf("ready\n");
    fflush(stdout);
    if (!harness_wait_for_file(argv[3])) return 1;
    int before = atomic_load(&fired);
    EXPECT_STATUS(notify_post(argv[2]), NOTIFY_STATUS_OK);
    EXPECT(harness_wait_count(&fired, before + 1, 5000) > before, "no delivery after the restart");
    uint64_t value = 0;
    long long deadline = harness_now_ms() + 5000;
    while (harness_now_ms() < deadline) {
      EXPECT_STATUS(notify_get_state(token, &value), NOTIFY_STATUS_OK);
      if (value == 4242) break;
      harness_sleep_ms(20);
    }
    EXPECT(value == 4242, "state after the restart is %llu", (unsigned long long)value);
    return harness_finish("state survive");
  }
  if (strcmp(mode, "fence") == 0 && argc == 4) {
    char noise_name[128];
    snprintf(noise_name, sizeof noise_name, "%s.noise", argv[2]);
    pthread_t noise_thread;
    pthread_create(&noise_thread, NULL, noise, noise_name);
    /* Every thread's calls that wait fence the posts of the process, the others' too. */
    struct fence_thread threads[FENCE_THREADS];
    for (int t = 0; t < FENCE_THREADS; t++) {
      snprintf(threads[t].name, sizeof threads[t].name, "%s.%d", argv[2], t);
      pthread_create(&threads[t].thread, NULL, fence_rounds, &threads[t]);
    }
    for (int t = 0; t < FENCE_THREADS; t++) pthread_join(threads[t].thread, NULL);
    atomic_store(&stop_noise, 1);
    pthread_join(noise_thread, NULL);
    EXPECT(atomic_load(&fired) == 0, "%d new handlers ran for posts made before them",
           atomic_load(&fired));
    /* Threads that post and then wait at once share round trips. */
    EXPECT_STATUS(notify_dump_status(argv[3]), NOTIFY_STATUS_OK);
    FILE *report = fopen(argv[3], "r");
    EXPECT(report != NULL, "no status report at %s", argv[3]);
    char line[512];
    unsigned long long posts = 0, sent = 0, joined = 0;
    int found = 0;
    while (report && fgets(line, sizeof line, report)) {
      found |= sscanf(line,
                      "c library: posts %llu, round trips for order %llu, calls that waited "
                      "for another's %llu",
                      &posts, &sent, &joined) == 3;
    }
    if (report) fclose(report);
    EXPECT(found, "the status report has no c library line");
    EXPECT(sent > 0 && joined > 0, "round trips for order %llu, joined %llu of %llu posts", sent,
           joined, posts);
    printf("posts %llu round trips %llu joined %llu\n", posts, sent, joined);
    return harness_finish("state fence");
  }
  return 64;
}
