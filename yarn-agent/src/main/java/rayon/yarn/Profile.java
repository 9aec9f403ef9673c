package rayon.yarn;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.NavigableMap;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.RLESparseResourceAllocation;

/**
 * What is free in YARN's plan over a window, as the runs of whole plan steps our placement endpoint reads.
 *
 * <p>A step's free capacity is the least YARN's run-length profile has at any moment of it (a change inside a step
 * counts for the whole step), so that whatever our planner places inside it also fits YARN's plan.
 */
final class Profile {
  private Profile() {
  }

  /** The runs {start, end, resources: {memory, vcores}} over [start, end) in steps of {@code step} ms. */
  static ArrayNode runs(RLESparseResourceAllocation free, long start, long end, long step) {
    ArrayNode runs = JsonNodeFactory.instance.arrayNode();
    NavigableMap<Long, Resource> points = free.getCumulative();
    long runStart = start;
    long[] current = null;
    for (long t = start; t < end; t += step) {
      long[] least = quantities(free.getCapacityAtTime(t));
      for (Resource inside : points.subMap(t, false, t + step, false).values()) {
        long[] other = quantities(inside);
        least[0] = Math.min(least[0], other[0]);
        least[1] = Math.min(least[1], other[1]);
      }
      if (current != null && (least[0] != current[0] || least[1] != current[1])) {
        runs.add(run(runStart, t, current));
        runStart = t;
      }
      current = least;
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
