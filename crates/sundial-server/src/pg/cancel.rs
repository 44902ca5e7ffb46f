//! Stopping a running query: [`CancelExec`] wraps every node of a physical plan and fails its stream at
//! the next batch once the query is canceled (CancelRequest) or its client went away. Operators that loop
//! over their input without yielding to the runtime (an aggregate over a join) still stop within one
//! batch of one operator, and unwinding drops every stream and spawned task of the plan, which frees
//! what the query held.
//!
//! [`spawn_stream`] drives the plan in its own task, so the connection task stays free to read the socket
//! (to notice EOF) and to watch for cancellation while the query computes.

use std::sync::Arc;

use futures::StreamExt;
use sundial_query::datafusion::arrow::array::RecordBatch;
use sundial_query::datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use sundial_query::datafusion::common::{DataFusionError, Result};
use sundial_query::datafusion::execution::{SendableRecordBatchStream, TaskContext};
use sundial_query::datafusion::physical_expr::PhysicalExpr;
use sundial_query::datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use sundial_query::datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties,
};

use super::SessionEntry;
use super::errors::PgErrorBox;

/// One query's cancellation: the session's [`super::CancelState`] at a generation.
#[derive(Clone, Debug)]
pub struct QueryGuard {
    pub entry: Arc<SessionEntry>,
    pub generation: u64,
}

impl QueryGuard {
    pub fn is_canceled(&self) -> bool {
        self.entry.cancel.is_canceled(self.generation)
    }
}

/// Batches the driving task may run ahead of the client.
const AHEAD_BATCHES: usize = 2;

#[derive(Debug)]
pub struct CancelExec {
    input: Arc<dyn ExecutionPlan>,
    guard: QueryGuard,
}

impl DisplayAs for CancelExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "CancelExec")
    }
}

impl ExecutionPlan for CancelExec {
    fn name(&self) -> &'static str {
        "CancelExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = children
            .pop()
            .ok_or_else(|| DataFusionError::Internal("CancelExec needs one child".into()))?;
        Ok(Arc::new(CancelExec {
            input,
            guard: self.guard.clone(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let guard = self.guard.clone();
        let schema = self.input.schema();
        let inner = self.input.execute(partition, context)?;
        let stream = inner.map(move |b| {
            if guard.is_canceled() {
                Err(DataFusionError::External(Box::new(PgErrorBox(
                    super::errors::PgError::canceled(),
                ))))
            } else {
                b
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}

/// Wraps every node of `plan` in a [`CancelExec`].
pub fn wrap(plan: Arc<dyn ExecutionPlan>, guard: &QueryGuard) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let wrapped: Arc<dyn ExecutionPlan> = Arc::new(CancelExec {
            input: node,
            guard: guard.clone(),
        });
        Ok(Transformed::yes(wrapped))
    })
    .map(|t| t.data)
}

/// Drives `stream` in its own task; the returned stream yields its batches. Dropping the returned stream
/// aborts the task.
pub fn spawn_stream(mut stream: SendableRecordBatchStream) -> SendableRecordBatchStream {
    let schema = stream.schema();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(AHEAD_BATCHES);
    let task = tokio::spawn(async move {
        while let Some(b) = stream.next().await {
            let err = b.is_err();
            if tx.send(b).await.is_err() || err {
                break;
            }
        }
    });
    let abort = AbortOnDrop(task);
    let out = futures::stream::unfold((rx, abort), |(mut rx, abort)| async move {
        rx.recv().await.map(|b| (b, (rx, abort)))
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, out))
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
