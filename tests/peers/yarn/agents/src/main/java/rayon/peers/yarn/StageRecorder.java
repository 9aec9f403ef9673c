package rayon.peers.yarn;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.yarn.api.records.ReservationId;
import org.apache.hadoop.yarn.api.records.ReservationRequest;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.Plan;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.RLESparseResourceAllocation;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationInterval;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.PlanningException;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.StageAllocator;

/**
 * Wraps one of YARN's stage allocators and notes what it answered for each stage, changing nothing.
 *
 * <p>YARN's planners sum the stages of a reservation into one profile before it reaches the plan; to say which
 * allocation belongs to which of our atoms we need each stage's answer as the stage allocator gave it.
 */
final class StageRecorder implements StageAllocator {

  /** One call: which recorder (planner) made it, for which stage, and its answer (null: the stage did not fit). */
  record Call(int recorder, ReservationRequest stage, Map<ReservationInterval, Resource> answer) {
  }

  /** The calls of one submission, shared by every recorder of an agent. */
  static final class Log {
    private final List<Call> calls = new ArrayList<>();

    void clear() {
      calls.clear();
    }

    /**
     * The answers of the planner that placed the reservation: the calls after the last change of recorder.
     * An agent that tries several planners (AlignedPlannerWithGreedy) stops at the first that succeeds.
     */
    List<Call> placed() {
      int first = calls.size();
      while (first > 0 && calls.get(first - 1).recorder() == calls.get(calls.size() - 1).recorder()) {
        first--;
      }
      List<Call> found = new ArrayList<>();
      for (Call call : calls.subList(first, calls.size())) {
        if (call.answer() != null) {
          found.add(call);
        }
      }
      return found;
    }
  }

  private final StageAllocator inner;
  private final int id;
  private final Log log;

  StageRecorder(StageAllocator inner, int id, Log log) {
    this.inner = inner;
    this.id = id;
    this.log = log;
  }

  @Override
  public Map<ReservationInterval, Resource> computeStageAllocation(Plan plan, RLESparseResourceAllocation planLoads,
      RLESparseResourceAllocation planModifications, ReservationRequest rr, long stageArrival, long stageDeadline,
      long period, String user, ReservationId oldId) throws PlanningException {
    Map<ReservationInterval, Resource> answer = inner.computeStageAllocation(plan, planLoads, planModifications, rr,
        stageArrival, stageDeadline, period, user, oldId);
    log.calls.add(new Call(id, rr, answer));
    return answer;
  }
}
