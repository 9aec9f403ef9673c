package rayon.peers.yarn;

import java.lang.reflect.Field;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.AlignedPlannerWithGreedy;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.GreedyReservationAgent;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.IterativePlanner;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.ReservationAgent;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.StageAllocator;

/**
 * YARN's agents by our names, each configured through YARN's own keys, with a {@link StageRecorder} around every
 * stage allocator inside them.
 *
 * <ul>
 *   <li>{@code greedy}: GreedyReservationAgent as YARN configures it by default (in 3.4 that is
 *       {@code favor-early-allocation=true}: stages placed from the arrival on, "allocate left");</li>
 *   <li>{@code greedy-right}: the same with {@code favor-early-allocation=false}, Rayon's late placement;</li>
 *   <li>{@code aligned}: AlignedPlannerWithGreedy, the ReservationSystem's default agent (low-cost aligned,
 *       then greedy), smoothness factor as configured by default.</li>
 * </ul>
 */
final class Agents {

  static final List<String> NAMES = List.of("greedy", "greedy-right", "aligned");
  private static final String FAVOR_EARLY = "yarn.resourcemanager.reservation-system.favor-early-allocation";

  private Agents() {
  }

  /** A fresh agent by name whose stage answers go to `log`. */
  static ReservationAgent create(String name, StageRecorder.Log log) {
    Configuration conf = new Configuration(false);
    ReservationAgent agent;
    switch (name) {
      case "greedy" -> agent = new GreedyReservationAgent();
      case "greedy-right" -> {
        conf.setBoolean(FAVOR_EARLY, false);
        agent = new GreedyReservationAgent();
      }
      case "aligned" -> agent = new AlignedPlannerWithGreedy();
      default -> throw new IllegalArgumentException("unknown agent `" + name + "`; the agents are " + NAMES);
    }
    agent.init(conf);
    if (record(agent, log, 0) == 0) {
      throw new IllegalStateException("found no stage allocator inside " + agent.getClass().getName());
    }
    return agent;
  }

  /**
   * Puts a recorder around each stage allocator reachable from `agent` (its planner, or the planners it tries in
   * turn) and returns how many it found. The fields are read by reflection: YARN keeps them private, and the
   * planner's own setter puts the recorder in.
   */
  private static int record(Object agent, StageRecorder.Log log, int next) {
    if (agent instanceof IterativePlanner planner) {
      StageAllocator inner = (StageAllocator) read(planner, IterativePlanner.class, "algStageAllocator");
      planner.setAlgStageAllocator(new StageRecorder(inner, next, log));
      return 1;
    }
    int found = 0;
    for (String field : new String[] {"planner", "algs"}) {
      Object inner = readIfPresent(agent, field);
      if (inner instanceof List<?> list) {
        for (Object each : list) {
          found += record(each, log, next + found);
        }
      } else if (inner != null) {
        found += record(inner, log, next + found);
      }
    }
    return found;
  }

  private static Object readIfPresent(Object owner, String name) {
    try {
      return read(owner, owner.getClass(), name);
    } catch (IllegalStateException absent) {
      return null;
    }
  }

  private static Object read(Object owner, Class<?> type, String name) {
    try {
      Field field = type.getDeclaredField(name);
      field.setAccessible(true);
      return field.get(owner);
    } catch (NoSuchFieldException | IllegalAccessException e) {
      throw new IllegalStateException(type.getName() + " has no readable field `" + name + "`", e);
    }
  }
}
