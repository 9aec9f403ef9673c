package rayon.peers.yarn;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.yarn.api.records.ReservationId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.RMContextImpl;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.CapacityOverTimePolicy;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.InMemoryPlan;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.InMemoryReservationAllocation;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.NoOverCommitPolicy;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationInterval;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationSchedulerConfiguration;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.SharingPolicy;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.PlanningException;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.ReservationAgent;
import org.apache.hadoop.yarn.util.resource.DefaultResourceCalculator;
import org.apache.hadoop.yarn.util.resource.DominantResourceCalculator;
import org.apache.hadoop.yarn.util.resource.ResourceCalculator;
import org.apache.hadoop.yarn.util.resource.Resources;

/**
 * YARN's {@link InMemoryPlan} laid over the facts of our cluster file, as the Python side writes them:
 *
 * <pre>
 * {"queue": "dedicated", "start": MS, "end": MS, "step": MS, "capacity": {"memory": MB, "vcores": N},
 *  "lower": [[FROM_MS, TO_MS, MB, N], ...], "calculator": "dominant" | "default",
 *  "policy": {"instantaneous": PERCENT, "average": PERCENT, "window": MS} (empty: no user limits)}
 * </pre>
 *
 * <p>YARN's plan has one total capacity and no horizon. Where our capacity is lower ({@code lower}: the capacity
 * of each run of steps below the largest) and outside our plan's window, a pinned reservation of a user of its
 * own holds the difference, so that YARN's agents see what is free exactly as our planner does.
 */
final class Plans {

  /** How far before and after our window the pinned reservation reaches: past any deadline in our streams. */
  private static final long OUTSIDE = 366L * 24 * 3600 * 1000;
  private static final String HOLDER = "rayon-capacity";
  private static final AtomicLong IDS = new AtomicLong();

  private Plans() {
  }

  /** A fresh plan with `agent` as its agent, the capacity it never had pinned. */
  static InMemoryPlan build(JsonNode facts, ReservationAgent agent) throws PlanningException {
    String queue = facts.path("queue").asText("dedicated");
    ResourceCalculator calculator = "default".equals(facts.path("calculator").asText("dominant"))
        ? new DefaultResourceCalculator() : new DominantResourceCalculator();
    Resource total = resource(facts.get("capacity"));
    SharingPolicy policy = sharing(queue, facts.path("policy"));
    InMemoryPlan plan = new InMemoryPlan(null, policy, agent, total, facts.get("step").asLong(), calculator,
        Resource.newInstance(1, 1), total, queue, null, true, new RMContextImpl());
    pin(plan, held(facts, total), calculator);
    return plan;
  }

  /**
   * Our cluster's user limits as YARN's sharing policy: none, NoOverCommitPolicy (capacity alone, as our plan
   * without limits); else CapacityOverTimePolicy with them. YARN's own default is the latter at 100% and 100%,
   * which is not the same as no limit: on a busy week its average test refuses allocations within capacity.
   */
  private static SharingPolicy sharing(String queue, JsonNode limits) {
    if (limits.isEmpty()) {
      return new NoOverCommitPolicy();
    }
    CapacityOverTimePolicy policy = new CapacityOverTimePolicy();
    policy.init(queue, new Limits(limits));
    return policy;
  }

  /** What the pinned reservation holds: everything outside [start, end), the shortfall inside it. */
  private static Map<ReservationInterval, Resource> held(JsonNode facts, Resource total) {
    long start = facts.get("start").asLong();
    long end = facts.get("end").asLong();
    Map<ReservationInterval, Resource> held = new HashMap<>();
    held.put(new ReservationInterval(start - OUTSIDE, start), total);
    held.put(new ReservationInterval(end, end + OUTSIDE), total);
    for (JsonNode run : facts.path("lower")) {
      Resource capacity = Resource.newInstance(run.get(2).asLong(), run.get(3).asInt());
      Resource shortfall = Resources.subtract(total, capacity);
      if (!Resources.isNone(shortfall)) {
        held.put(new ReservationInterval(run.get(0).asLong(), run.get(1).asLong()), shortfall);
      }
    }
    return held;
  }

  private static void pin(InMemoryPlan plan, Map<ReservationInterval, Resource> held, ResourceCalculator calculator)
      throws PlanningException {
    ReservationId id = ReservationId.newInstance(0, IDS.incrementAndGet());
    long first = held.keySet().stream().mapToLong(ReservationInterval::getStartTime).min().orElseThrow();
    long last = held.keySet().stream().mapToLong(ReservationInterval::getEndTime).max().orElseThrow();
    // isRecovering=true: YARN's way of putting a reservation into a plan without asking the sharing policy.
    plan.addReservation(new InMemoryReservationAllocation(id, null, HOLDER, plan.getQueueName(), first, last, held,
        calculator, plan.getMinimumAllocation()), true);
  }

  static Resource resource(JsonNode node) {
    return Resource.newInstance(node.get("memory").asLong(), node.get("vcores").asInt());
  }

  /** A queue's reservation settings (percentages, window in ms); YARN's defaults where absent: 100%, 100%, 1 day. */
  private static final class Limits extends ReservationSchedulerConfiguration {
    private final float instantaneous;
    private final float average;
    private final long window;

    Limits(JsonNode policy) {
      super();
      instantaneous = (float) policy.path("instantaneous").asDouble(100.0);
      average = (float) policy.path("average").asDouble(100.0);
      window = policy.path("window").asLong(DEFAULT_RESERVATION_WINDOW);
    }

    @Override
    public boolean isReservable(String queue) {
      return true;
    }

    @Override
    public Map<org.apache.hadoop.yarn.api.records.ReservationACL,
        org.apache.hadoop.security.authorize.AccessControlList> getReservationAcls(String queue) {
      return Map.of();
    }

    @Override
    public float getInstantaneousMaxCapacity(String queue) {
      return instantaneous;
    }

    @Override
    public float getAverageCapacity(String queue) {
      return average;
    }

    @Override
    public long getReservationWindow(String queue) {
      return window;
    }
  }
}
