package rayon.yarn;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.Field;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.CapacityOverTimePolicy;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.Plan;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.SharingPolicy;

/**
 * The per-user limits of the plan's sharing policy, as our placement endpoint reads them ({@code limits}).
 *
 * <p>YARN's CapacityOverTimePolicy holds each user to an instantaneous share of the plan and a share averaged over
 * a window ({@code instantaneous-max-capacity}, {@code average-capacity}, {@code reservation-window} of the queue);
 * {@code getAvailableResourceOverTime} shows only the first, so the agent sends all three with the user's use, and
 * our placement keeps to them rather than YARN refusing the answer at the write. The numbers are read from the
 * policy the plan validates with (it keeps them private), so they are the ones it enforces.
 */
final class Limits {
  final float instantaneous;
  final float average;
  final long windowMs;

  private Limits(float instantaneous, float average, long windowMs) {
    this.instantaneous = instantaneous;
    this.average = average;
    this.windowMs = windowMs;
  }

  /**
   * The plan's limits, or null when they cannot bind: its policy holds users to none (NoOverCommitPolicy, or
   * another's own), or its average share is the whole plan (YARN's default), which no user's use can pass; the
   * instantaneous share alone is in what YARN shows free already. Sending the user's use costs a window each way.
   */
  static Limits of(Plan plan) {
    SharingPolicy policy = plan.getSharingPolicy();
    if (!(policy instanceof CapacityOverTimePolicy)) {
      return null;
    }
    Limits limits = new Limits(share(policy, "maxInst"), share(policy, "maxAvg"), policy.getValidWindow());
    return limits.average < 1f ? limits : null;
  }

  private static float share(SharingPolicy policy, String name) {
    try {
      Field field = CapacityOverTimePolicy.class.getDeclaredField(name);
      field.setAccessible(true);
      return Math.max(0f, Math.min(1f, field.getFloat(policy)));
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new IllegalStateException("YARN's CapacityOverTimePolicy has no field " + name + " to read its limit "
          + "from (a Hadoop other than 3.4?)", e);
    }
  }

  ObjectNode json() {
    ObjectNode limits = JsonNodeFactory.instance.objectNode();
    limits.put("instantaneous", instantaneous);
    limits.put("average", average);
    limits.put("window", windowMs);
    return limits;
  }
}
