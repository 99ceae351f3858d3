/*
 * Tests of a notification's lines and incidents (notification.h): they are
 * kept in order however many are added, and one line (most notifications:
 * a match) is not kept in a block sized for eight (issue 27: a session
 * keeps every notification it told, session.queue_max of them).
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "pipeline/notification.h"

TEST(one_line_holds_room_for_one)
{
  Notification *n = notification_new(kNotifOutput, "m1", NULL, kModeIdle);
  notification_add_line(n, 7, 0, 0, false, "Error: one match", 16);
  CHECK_INT(n->nlines, 1);
  CHECK_STR(n->lines[0].text, "Error: one match");
  CHECK(malloc_usable_size(n->lines) < 2 * sizeof *n->lines);
  NoteIncident inc = {0};
  inc.id = 3;
  notification_add_incident(n, &inc);
  CHECK(malloc_usable_size(n->incidents) < 2 * sizeof *n->incidents);
  notification_free(n);
}

TEST(many_lines_and_incidents_are_kept_in_order)
{
  Notification *n = notification_new(kNotifOutput, "m1", NULL, kModeIdle);
  char text[32];
  for (int i = 0; i < 300; i++) {
    int len = snprintf(text, sizeof text, "line %d", i);
    notification_add_line(n, (uint64_t)i + 1, i % 2, -1, false, text, (size_t)len);
    NoteIncident inc = {0};
    inc.id = (uint64_t)i + 1;
    notification_add_incident(n, &inc);
  }
  CHECK_INT(n->nlines, 300);
  CHECK_INT(n->nincidents, 300);
  for (int i = 0; i < 300 && !check_failures_in_test; i++) {
    snprintf(text, sizeof text, "line %d", i);
    CHECK_STR(n->lines[i].text, text);
    CHECK_INT(n->lines[i].seq, i + 1);
    CHECK_INT(n->incidents[i].id, i + 1);
  }
  notification_free(n);
}

int
main(void)
{
  RUN(one_line_holds_room_for_one);
  RUN(many_lines_and_incidents_are_kept_in_order);
  return check_summary();
}
