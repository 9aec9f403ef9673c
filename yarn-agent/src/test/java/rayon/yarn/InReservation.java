package rayon.yarn;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.ReservationId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.ResourceOption;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.api.protocolrecords.UpdateNodeResourceRequest;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationAllocation;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.RMApp;
import org.apache.hadoop.yarn.server.resourcemanager.rmapp.attempt.RMAppAttempt;
import org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainer;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.SchedulerApplicationAttempt;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler;

/**
 * A small application of ours run inside a reservation on a real NodeManager: submitted with the reservation's id
 * to the reservable queue, the scheduler adds it to the reservation's own queue (made by YARN's PlanFollower); its
 * ApplicationMaster (TinyMaster, a JVM the NodeManager starts in the AM container) asks for one task container and
 * runs {@code sleep} in it. While it runs, every container the scheduler gives it is recorded from the RM's side:
 * when it was allocated, where, and in which queue; and the reservation's window in YARN's plan.
 */
final class InReservation {
  static final long WAIT_MS = 240_000;
  static final int TASK_SECONDS = 3;

  private InReservation() {
  }

  static ObjectNode run(ResourceManager rm, Configuration conf, YarnClient yarn, String queue,
      ReservationId reservation, Resource container) throws Exception {
    // The PlanFollower makes the reservation's queue, and gives it capacity once the reservation holds some: an
    // application added to the queue before then is not started when the capacity comes.
    CapacityScheduler scheduler = (CapacityScheduler) rm.getResourceScheduler();
    waitFor(() -> scheduler.getQueue(reservation.toString()) != null
        && scheduler.getQueue(reservation.toString()).getCapacity() > 0, "capacity in the reservation's queue");
    refreshQueueResources(rm);
    YarnClientApplication app = yarn.createApplication();
    ApplicationSubmissionContext context = app.getApplicationSubmissionContext();
    ApplicationId id = context.getApplicationId();
    context.setApplicationName("rayon-in-reservation");
    context.setQueue("root." + queue);  // 3.4 matches the reservation's parent by its path, not its short name
    context.setReservationID(reservation);
    context.setResource(container);
    context.setMaxAppAttempts(1);
    context.setAMContainerSpec(ContainerLaunchContext.newInstance(Collections.emptyMap(), Collections.emptyMap(),
        List.of(masterCommand(conf, container)), null, null, null));
    yarn.submitApplication(context);
    Map<ContainerId, RMContainer> seen = new LinkedHashMap<>();
    Map<ContainerId, String> seenIn = new LinkedHashMap<>();
    RMApp rmApp = rm.getRMContext().getRMApps().get(id);
    ObjectNode answer = JsonNodeFactory.instance.objectNode();
    ArrayNode history = answer.putArray("history");  // the application's state, queue and diagnostics as they changed
    String[] said = new String[1];
    waitFor(() -> {
      RMAppAttempt attempt = rmApp.getCurrentAppAttempt();
      SchedulerApplicationAttempt live = attempt == null ? null
          : scheduler.getApplicationAttempt(attempt.getAppAttemptId());
      if (live != null) {
        for (RMContainer held : live.getLiveContainers()) {
          if (seen.putIfAbsent(held.getContainerId(), held) == null) {
            seenIn.put(held.getContainerId(), live.getQueueName());
          }
        }
      }
      YarnApplicationState state = rmApp.createApplicationState();
      String now = state + " in " + (live == null ? "?" : live.getQueueName()) + ": " + rmApp.getDiagnostics();
      if (!now.equals(said[0])) {
        said[0] = now;
        history.addObject().put("at", System.currentTimeMillis()).put("what", now);
      }
      return state == YarnApplicationState.FINISHED || state == YarnApplicationState.FAILED
          || state == YarnApplicationState.KILLED;
    }, id + " ending");
    ApplicationReport report = yarn.getApplicationReport(id);
    answer.put("application", id.toString());
    answer.put("submitted_to", report.getQueue());
    answer.put("state", report.getYarnApplicationState().toString());
    answer.put("final_status", report.getFinalApplicationStatus().toString());
    answer.put("diagnostics", report.getDiagnostics());
    ReservationAllocation held = rm.getRMContext().getReservationSystem().getPlan(queue)
        .getReservationById(reservation);
    if (held != null) {
      answer.put("reservation_start", held.getStartTime());
      answer.put("reservation_end", held.getEndTime());
    }
    ContainerId master = rmApp.getCurrentAppAttempt().getMasterContainer().getId();
    ArrayNode containers = answer.putArray("containers");
    for (Map.Entry<ContainerId, RMContainer> entry : seen.entrySet()) {
      RMContainer given = entry.getValue();
      ObjectNode item = containers.addObject();
      item.put("id", entry.getKey().toString());
      item.put("master", entry.getKey().equals(master));
      item.put("queue", seenIn.get(entry.getKey()));
      item.put("node", String.valueOf(given.getAllocatedNode()));
      item.put("allocated", given.getCreationTime());
      item.put("finished", given.getFinishTime());
      item.put("memory", given.getAllocatedResource().getMemorySize());
      item.put("vcores", given.getAllocatedResource().getVirtualCores());
    }
    return answer;
  }

  /**
   * YARN 3.4.1 gives a reservation's queue its share (the PlanFollower's entitlement) but not the resources that
   * share is of, until the scheduler next recomputes the cluster's resources (a node joins, leaves or changes): till
   * then the queue's absolute capacity is zero and nothing is allocated in it. Setting each node's resource to what
   * it is (as {@code yarn rmadmin -updateNodeResource} does) makes the scheduler recompute them.
   */
  private static void refreshQueueResources(ResourceManager rm) throws Exception {
    Map<NodeId, ResourceOption> same = new HashMap<>();
    for (RMNode node : rm.getRMContext().getRMNodes().values()) {
      same.put(node.getNodeID(), ResourceOption.newInstance(node.getTotalCapability(), -1));
    }
    rm.getRMContext().getRMAdminService().updateNodeResource(UpdateNodeResourceRequest.newInstance(same));
  }

  /** TinyMaster in a JVM of its own: this JVM's java and class path (the machine is the NodeManager's). */
  private static String masterCommand(Configuration conf, Resource task) {
    String java = new File(System.getProperty("java.home"), "bin/java").getAbsolutePath();
    String logs = ApplicationConstants.LOG_DIR_EXPANSION_VAR;
    return String.join(" ", java, "-Xmx160m", "-XX:TieredStopAtLevel=1", "-cp",
        System.getProperty("java.class.path"), TinyMaster.class.getName(),
        conf.get(YarnConfiguration.RM_SCHEDULER_ADDRESS), String.valueOf(task.getMemorySize()),
        String.valueOf(task.getVirtualCores()), String.valueOf(TASK_SECONDS), String.valueOf(WAIT_MS / 2000),
        "1>" + logs + "/stdout", "2>" + logs + "/stderr");
  }

  interface Condition {
    boolean holds() throws Exception;
  }

  static void waitFor(Condition condition, String what) throws Exception {
    long until = System.currentTimeMillis() + WAIT_MS;
    while (!condition.holds()) {
      if (System.currentTimeMillis() > until) {
        throw new IllegalStateException(what + " did not come within " + WAIT_MS / 1000 + " s");
      }
      Thread.sleep(100);
    }
  }
}
