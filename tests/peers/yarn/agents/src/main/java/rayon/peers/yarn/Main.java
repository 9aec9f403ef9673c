package rayon.peers.yarn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.hadoop.yarn.api.records.ReservationDefinition;
import org.apache.hadoop.yarn.api.records.ReservationId;
import org.apache.hadoop.yarn.api.records.ReservationRequest;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.InMemoryPlan;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.RLESparseResourceAllocation;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationAllocation;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationInterval;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.exceptions.PlanningException;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.planning.ReservationAgent;
import org.apache.hadoop.yarn.util.resource.Resources;

/**
 * Submits a stream of YARN reservations, in order, to each of YARN's agents on a fresh plan, and writes one JSON
 * line per decision.
 *
 * <pre>
 * java -cp ... rayon.peers.yarn.Main JOB.json [OUT.jsonl]
 * JOB: {"plan": {...see Plans...}, "agents": ["greedy", ...], "warmup": PASSES, "repeat": PASSES,
 *       "submissions": [{"user": U, "body": {YARN REST submission body}}, ...]}
 * OUT: {"agent", "index", "name", "accepted", "nanos", "stages": [{"stage": K, "intervals": [[FROM_MS, TO_MS, MB,
 *       VCORES], ...]}], "matches_plan"} or, rejected, {..., "exception": CLASS, "message": TEXT, "crashed": BOOL,
 *       "proposed": STAGES, when the agent found an allocation that the plan then refused}
 * </pre>
 *
 * <p>Each agent first runs the whole stream `warmup` times on fresh plans, so that the timed passes (nanos: the
 * agent's createReservation alone, after the JIT has compiled it; the least over `repeat` passes, which damps
 * what other processes on the machine add) measure steady state. A stage's intervals are
 * what YARN's stage allocator answered for it; matches_plan says they add up to what the plan holds.
 */
public final class Main {

  private static final ObjectMapper JSON = new ObjectMapper();

  private Main() {
  }

  /** One submission: who asks, the definition, and which stage index each of its requests is. */
  private record Submission(String name, String user, ReservationDefinition definition,
      Map<ReservationRequest, Integer> stages) {
  }

  public static void main(String[] args) throws IOException, PlanningException {
    if (args.length < 1 || args.length > 2) {
      System.err.println("usage: rayon.peers.yarn.Main JOB.json [OUT.jsonl]");
      System.exit(2);
    }
    JsonNode job = JSON.readTree(new File(args[0]));
    List<Submission> stream = new ArrayList<>();
    for (JsonNode item : job.get("submissions")) {
      stream.add(submission(item));
    }
    List<String> agents = new ArrayList<>();
    job.path("agents").forEach(a -> agents.add(a.asText()));
    int warmup = job.path("warmup").asInt(1);
    int repeat = Math.max(1, job.path("repeat").asInt(1));
    try (Writer out = args.length == 2
        ? Files.newBufferedWriter(Path.of(args[1]), StandardCharsets.UTF_8)
        : new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8))) {
      for (String name : agents.isEmpty() ? Agents.NAMES : agents) {
        for (int pass = 0; pass < warmup; pass++) {
          run(name, job.get("plan"), stream, false);
        }
        List<ObjectNode> best = run(name, job.get("plan"), stream, true);
        for (int pass = 1; pass < repeat; pass++) {
          fastest(best, run(name, job.get("plan"), stream, true));
        }
        for (ObjectNode line : best) {
          out.write(JSON.writeValueAsString(line));
          out.write('\n');
        }
      }
    }
  }

  /** Each decision's least time over the passes; a pass that decided otherwise is marked, not hidden. */
  private static void fastest(List<ObjectNode> best, List<ObjectNode> again) {
    for (int index = 0; index < best.size(); index++) {
      ObjectNode line = best.get(index);
      ObjectNode other = again.get(index);
      line.put("nanos", Math.min(line.get("nanos").asLong(), other.get("nanos").asLong()));
      if (line.get("accepted").asBoolean() != other.get("accepted").asBoolean()) {
        line.put("deterministic", false);
      }
    }
  }

  private static Submission submission(JsonNode item) {
    ReservationDefinition definition = Submissions.definition(item.get("body"));
    Map<ReservationRequest, Integer> stages = new IdentityHashMap<>();
    List<ReservationRequest> requests = definition.getReservationRequests().getReservationResources();
    for (int index = 0; index < requests.size(); index++) {
      stages.put(requests.get(index), index);
    }
    return new Submission(definition.getReservationName(), item.path("user").asText("user"), definition, stages);
  }

  /** The stream through a fresh agent on a fresh plan: each decision as a line, when `answer` (a warm-up: none). */
  private static List<ObjectNode> run(String name, JsonNode facts, List<Submission> stream, boolean answer)
      throws PlanningException {
    List<ObjectNode> lines = new ArrayList<>();
    StageRecorder.Log log = new StageRecorder.Log();
    ReservationAgent agent = Agents.create(name, log);
    InMemoryPlan plan = Plans.build(facts, agent);
    long cluster = facts.get("start").asLong();
    for (int index = 0; index < stream.size(); index++) {
      Submission submission = stream.get(index);
      ReservationId id = ReservationId.newInstance(cluster, index + 1L);
      log.clear();
      ObjectNode line = JSON.createObjectNode();
      line.put("agent", name).put("index", index).put("name", submission.name());
      boolean accepted = false;
      long began = System.nanoTime();
      try {
        accepted = agent.createReservation(id, submission.user(), plan, submission.definition());
        if (!accepted) {
          line.put("exception", "").put("message", "the agent answered false").put("crashed", false);
        }
      } catch (PlanningException e) {
        line.put("exception", e.getClass().getName()).put("message", e.getMessage()).put("crashed", false);
      } catch (RuntimeException e) {
        line.put("exception", e.getClass().getName()).put("message", String.valueOf(e.getMessage()))
            .put("crashed", true);
      }
      long nanos = System.nanoTime() - began;
      if (!answer) {
        continue;
      }
      line.put("accepted", accepted).put("nanos", nanos);
      if (accepted) {
        describe(line, submission, log.placed(), plan.getReservationById(id));
      } else if (!log.placed().isEmpty()) {
        line.set("proposed", stages(submission, log.placed(), null));  // what the plan refused
      }
      lines.add(line);
    }
    return lines;
  }

  /** The stages' answers as JSON, and whether they add up to the reservation's allocation in the plan. */
  private static void describe(ObjectNode line, Submission submission, List<StageRecorder.Call> calls,
      ReservationAllocation held) {
    RLESparseResourceAllocation sum = new RLESparseResourceAllocation(held.getResourcesOverTime()
        .getResourceCalculator());
    line.set("stages", stages(submission, calls, sum));
    line.put("matches_plan", same(sum, held.getResourcesOverTime()));
  }

  /** Each stage's answer: its index in the submission and its intervals (added to `sum` unless it is null). */
  private static ArrayNode stages(Submission submission, List<StageRecorder.Call> calls,
      RLESparseResourceAllocation sum) {
    ArrayNode stages = JSON.createArrayNode();
    for (StageRecorder.Call call : calls) {
      Integer stage = submission.stages().get(call.stage());
      if (stage == null) {
        throw new IllegalStateException("a stage answer for a request that is not in " + submission.name());
      }
      ArrayNode intervals = stages.addObject().put("stage", stage).putArray("intervals");
      for (Map.Entry<ReservationInterval, Resource> each : call.answer().entrySet()) {
        ReservationInterval interval = each.getKey();
        Resource resource = each.getValue();
        intervals.addArray().add(interval.getStartTime()).add(interval.getEndTime())
            .add(resource.getMemorySize()).add(resource.getVirtualCores());
        if (sum != null) {
          sum.addInterval(interval, resource);
        }
      }
    }
    return stages;
  }

  private static boolean same(RLESparseResourceAllocation one, RLESparseResourceAllocation other) {
    TreeSet<Long> points = new TreeSet<>(one.getCumulative().keySet());
    points.addAll(other.getCumulative().keySet());
    for (long point : points) {
      if (!Resources.equals(at(one, point), at(other, point))) {
        return false;
      }
    }
    return true;
  }

  /** The profile's value from `point` on; none where it holds nothing (its maps end each run with a null). */
  private static Resource at(RLESparseResourceAllocation profile, long point) {
    Map.Entry<Long, Resource> entry = profile.getCumulative().floorEntry(point);
    return entry == null || entry.getValue() == null ? Resources.none() : entry.getValue();
  }
}
