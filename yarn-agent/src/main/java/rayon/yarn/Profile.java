package rayon.yarn;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.NavigableMap;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.RLESparseResourceAllocation;

/**
 * What is free in YARN's plan over a window (or what a user holds), as the runs of whole plan steps our placement
 * endpoint reads.
 *
 * <p>A step's free capacity is the least YARN's run-length profile has at any moment of it (a change inside a step
 * counts for the whole step), so that whatever our planner places inside it also fits YARN's plan; a step's use is
 * the most, so that the user's limits are judged on no less than it holds.
 */
final class Profile {
  private Profile() {
  }

  /**
   * The runs {start, end, resources: {memory, vcores}} over [start, end) in steps of {@code step} ms: each step's
   * least ({@code most} false: what is free) or most (true: what is held).
   */
  static ArrayNode runs(RLESparseResourceAllocation profile, long start, long end, long step, boolean most) {
    ArrayNode runs = JsonNodeFactory.instance.arrayNode();
    NavigableMap<Long, Resource> points = profile.getCumulative();
    long runStart = start;
    long[] current = null;
    for (long t = start; t < end; t += step) {
      long[] taken = quantities(profile.getCapacityAtTime(t));
      for (Resource inside : points.subMap(t, false, t + step, false).values()) {
        long[] other = quantities(inside);
        for (int i = 0; i < taken.length; i++) {
          taken[i] = most ? Math.max(taken[i], other[i]) : Math.min(taken[i], other[i]);
        }
      }
      if (current != null && (taken[0] != current[0] || taken[1] != current[1])) {
        runs.add(run(runStart, t, current));
        runStart = t;
      }
      current = taken;
    }
    if (current != null) {
      runs.add(run(runStart, end, current));
    }
    return runs;
  }

  private static long[] quantities(Resource resource) {
    if (resource == null) {
      return new long[] {0, 0};
    }
    return new long[] {Math.max(0, resource.getMemorySize()), Math.max(0, resource.getVirtualCores())};
  }

  private static ObjectNode run(long start, long end, long[] quantities) {
    ObjectNode run = JsonNodeFactory.instance.objectNode();
    run.put("start", start);
    run.put("end", end);
    ObjectNode resources = run.putObject("resources");
    resources.put("memory", quantities[0]);
    resources.put("vcores", quantities[1]);
    return run;
  }
}
